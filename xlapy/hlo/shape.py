"""Shapes: arrays with dimensions and an optional layout, tuples, and tokens.

``Shape`` is immutable and hashable. Layouts are kept as XLA's
``minor_to_major`` order; ``{1,0}`` is row-major for rank 2. Equality includes
the layout; :meth:`Shape.compatible` ignores it (what shape inference checks).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Iterable, Sequence

from . import types as T
from .types import ElementType


@dataclass(frozen=True)
class Layout:
    """An array layout: ``minor_to_major`` plus any extra text after ``:`` (tiling, memory
    space)."""

    minor_to_major: tuple[int, ...]
    extra: str = ""   # verbatim text after ':' e.g. "T(2,128)" or "S(1)"

    def __str__(self) -> str:
        body = ",".join(str(d) for d in self.minor_to_major)
        return "{" + body + (":" + self.extra if self.extra else "") + "}"

    @staticmethod
    def row_major(rank: int) -> "Layout":
        return Layout(tuple(range(rank - 1, -1, -1)))


UNBOUNDED = -1  # dimension size of an unbounded dynamic dim ('?')


@dataclass(frozen=True)
class Shape:
    """An XLA shape.

    Array shapes have ``element_type`` (not TUPLE), ``dims`` and ``dynamic`` (one flag
    per dim: True for a bounded ``<=N`` or unbounded ``?`` dim). Tuple shapes have
    ``element_type is TUPLE`` and ``tuple_shapes``.
    """

    element_type: ElementType
    dims: tuple[int, ...] = ()
    dynamic: tuple[bool, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple["Shape", ...] = ()

    def __post_init__(self) -> None:
        if len(self.dynamic) != len(self.dims):   # normalise: one flag per dim
            object.__setattr__(self, "dynamic", (False,) * len(self.dims))

    # ----- constructors
    @staticmethod
    def array(element_type: ElementType | str, dims: Iterable[int] = (),
              layout: Sequence[int] | Layout | None = None,
              dynamic: Iterable[bool] | None = None) -> "Shape":
        et = T.BY_NAME[element_type] if isinstance(element_type, str) else element_type
        dims = tuple(int(d) for d in dims)
        dyn = tuple(bool(x) for x in dynamic) if dynamic is not None else (False,) * len(dims)
        if layout is not None and not isinstance(layout, Layout):
            layout = Layout(tuple(layout))
        return Shape(et, dims, dyn, layout)

    @staticmethod
    def tuple(shapes: Iterable["Shape"]) -> "Shape":
        return Shape(T.TUPLE, tuple_shapes=tuple(shapes))

    @staticmethod
    def token() -> "Shape":
        return Shape(T.TOKEN)

    @staticmethod
    def scalar(element_type: ElementType | str) -> "Shape":
        return Shape.array(element_type, ())

    # ----- predicates
    @property
    def is_tuple(self) -> bool:
        return self.element_type is T.TUPLE

    @property
    def is_token(self) -> bool:
        return self.element_type is T.TOKEN

    @property
    def is_array(self) -> bool:
        return not (self.is_tuple or self.is_token)

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def is_scalar(self) -> bool:
        return self.is_array and not self.dims

    @property
    def is_dynamic(self) -> bool:
        return any(self.dynamic) or any(s.is_dynamic for s in self.tuple_shapes)

    @property
    def num_elements(self) -> int:
        return prod(self.dims)

    @property
    def byte_size(self) -> int:
        """Dense size in bytes of an array (sum over leaves for a tuple; pointers not counted)."""
        if self.is_tuple:
            return sum(s.byte_size for s in self.tuple_shapes)
        return self.num_elements * self.element_type.byte_size

    @property
    def dtype(self):
        """NumPy dtype of an array shape."""
        return self.element_type.dtype

    # ----- derived shapes
    def with_dims(self, dims: Iterable[int]) -> "Shape":
        """Same element type, new dims, default (row-major) layout if this shape had one."""
        dims = tuple(dims)
        layout = Layout.row_major(len(dims)) if self.layout is not None else None
        return Shape(self.element_type, dims, (False,) * len(dims), layout)

    def with_element_type(self, et: ElementType) -> "Shape":
        return Shape(et, self.dims, self.dynamic, self.layout)

    def without_layout(self) -> "Shape":
        if self.is_tuple:
            return Shape.tuple(s.without_layout() for s in self.tuple_shapes)
        return Shape(self.element_type, self.dims, self.dynamic, None)

    def with_default_layout(self) -> "Shape":
        """The shape with row-major layouts everywhere a layout is missing."""
        if self.is_tuple:
            return Shape.tuple(s.with_default_layout() for s in self.tuple_shapes)
        if self.is_token or self.layout is not None:
            return self
        return Shape(self.element_type, self.dims, self.dynamic, Layout.row_major(self.rank))

    def compatible(self, other: "Shape") -> bool:
        """Equal up to layout (what HLO's type rules compare)."""
        if self.is_tuple or other.is_tuple:
            return (self.is_tuple and other.is_tuple
                    and len(self.tuple_shapes) == len(other.tuple_shapes)
                    and all(a.compatible(b) for a, b in zip(self.tuple_shapes, other.tuple_shapes)))
        return (self.element_type == other.element_type and self.dims == other.dims
                and self.dynamic == other.dynamic)

    def leaves(self) -> list["Shape"]:
        """Array/token leaves depth first (a non-tuple shape is its own single leaf)."""
        if not self.is_tuple:
            return [self]
        out: list[Shape] = []
        for s in self.tuple_shapes:
            out.extend(s.leaves())
        return out

    def subshape(self, index: Sequence[int]) -> "Shape":
        """The shape at a ShapeIndex such as ``(1, 0)``."""
        s = self
        for i in index:
            s = s.tuple_shapes[i]
        return s

    # ----- text
    def to_text(self, print_layout: bool = True) -> str:
        if self.is_tuple:
            return "(" + ", ".join(s.to_text(print_layout) for s in self.tuple_shapes) + ")"
        if self.is_token:
            return "token[]"
        parts = []
        for d, dyn in zip(self.dims, self.dynamic):
            parts.append("?" if d == UNBOUNDED else (f"<={d}" if dyn else str(d)))
        text = f"{self.element_type.name}[{','.join(parts)}]"
        if print_layout and self.layout is not None and (self.dims or self.layout.extra):
            text += str(self.layout)
        return text

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"Shape({self.to_text()!r})"


def shape_of_array(value) -> Shape:
    """The array shape (row-major layout) that holds a NumPy array."""
    import numpy as np
    a = np.asarray(value)
    return Shape.array(T.from_dtype(a.dtype), a.shape, Layout.row_major(a.ndim))


class ProgramShape:
    """Parameter shapes and result shape of a computation (``(p0, p1)->r``)."""

    __slots__ = ("parameters", "result", "parameter_names")

    def __init__(self, parameters: Sequence[Shape], result: Shape,
                 parameter_names: Sequence[str] | None = None) -> None:
        self.parameters = list(parameters)
        self.result = result
        self.parameter_names = list(parameter_names) if parameter_names else None

    def to_text(self, print_layout: bool = True) -> str:
        ps = ", ".join(s.to_text(print_layout) for s in self.parameters)
        return f"({ps})->{self.result.to_text(print_layout)}"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ProgramShape) and self.parameters == other.parameters
                and self.result == other.result)

    def __repr__(self) -> str:
        return f"ProgramShape({self.to_text()})"
