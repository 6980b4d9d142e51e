"""Generation profiles: the size knobs of a module, op weights and the large shapes.

``profile_for(seed, name)`` gives a fresh ``Profile`` for a named profile, or for
``"mixed"`` one chosen from the seed (mostly small, sometimes zero-sized dimensions,
medium or large shapes).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Profile:
    """Knobs of one generated module."""

    name: str = "small"
    n_ops: tuple = (6, 16)
    max_rank: int = 4
    dim_max: int = 6
    zero_dims: bool = False
    max_elems: int = 4096
    max_params: int = 10
    max_outputs: int = 6
    large_shapes: bool = False
    weights: dict = field(default_factory=dict)


DEFAULT_WEIGHTS = {
    "unary": 10, "binary": 14, "int_special": 4, "compare_select": 6, "clamp": 2,
    "convert": 6, "bitcast_convert": 2, "reduce_precision": 1,
    "broadcast": 5, "reshape": 4, "transpose": 4, "slice": 4, "concatenate": 3, "pad": 3,
    "reverse": 2, "iota": 2, "copy": 1, "dynamic_slice": 3, "dynamic_update_slice": 3,
    "gather": 3, "scatter": 3, "reduce": 8, "argmax": 2, "reduce_window": 3,
    "select_and_scatter": 2, "sort": 3, "dot": 4, "convolution": 2, "while": 2,
    "conditional": 2, "call": 1, "scan": 2, "tuple_param": 1, "softmax": 2, "layernorm": 1,
    "constant": 2, "rng_bit_generator": 1, "map": 1,
}
# ops a sub-computation (loop body, branch) may use
SUB_OPS = {"unary", "binary", "int_special", "compare_select", "clamp", "convert",
           "broadcast", "reshape", "transpose", "slice", "pad", "reverse", "dynamic_slice",
           "dynamic_update_slice", "reduce", "constant", "iota", "concatenate", "sort",
           "gather", "dot", "conditional", "reduce_window"}
# ops worth trying at the large sizes (the interpreter stays fast)
LARGE_OPS = {"unary": 10, "binary": 12, "compare_select": 4, "convert": 4, "broadcast": 3,
             "reshape": 3, "transpose": 8, "slice": 4, "concatenate": 3, "pad": 3,
             "reverse": 2, "dynamic_slice": 2, "dynamic_update_slice": 2, "reduce": 12,
             "argmax": 2, "softmax": 3, "layernorm": 2, "iota": 1, "gather": 1, "scatter": 1,
             "sort": 1, "reduce_window": 1, "dot": 2, "int_special": 2, "clamp": 1,
             "copy": 2}

LARGE_SHAPES = [(4096,), (5000,), (4099,), (8, 4100), (2, 8192), (4100, 3), (5000, 8),
                (64, 64), (65, 129), (200, 300), (128, 256), (300, 70), (1024, 512),
                (16, 64, 64), (4, 33, 700), (1100, 1000), (100, 4096), (2048, 40),
                (3, 5, 4096), (130, 70, 3)]


PROFILES = {
    "small": Profile(name="small"),
    "zero": Profile(name="zero", zero_dims=True),
    "deep": Profile(name="deep", n_ops=(20, 40), max_outputs=8, max_params=12, dim_max=8,
                    max_elems=8192),
    "medium": Profile(name="medium", dim_max=24, max_elems=20000, n_ops=(6, 14)),
    "large": Profile(name="large", large_shapes=True, max_elems=1_200_000, n_ops=(4, 9),
                     max_params=5, max_rank=4, dim_max=6),
}


def profile_for(seed: int, name: str = "mixed") -> Profile:
    """A fresh copy of profile ``name`` (for ``"mixed"``, one chosen by ``seed``)."""
    if name != "mixed":
        p = PROFILES[name]
    else:
        r = seed % 10
        p = PROFILES["large"] if r in (3, 7) else PROFILES["zero"] if r == 5 else \
            PROFILES["medium"] if r in (1, 8) else PROFILES["small"]
    return Profile(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in p.__dict__.items()})
