"""``benchmarks/bert.py`` (W7) at its smoke size on the interpreter: every xlapy column
runs and agrees with the float32 first loss, the loss curves are compared, and the
TensorFlow columns are left out when TensorFlow is not installed."""
from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import bert  # noqa: E402


def test_bert_smoke(tmp_path, capsys, monkeypatch):
    for key in ("OMP_WAIT_POLICY", "XLAPY_DISABLE_CACHE"):   # the script sets them
        monkeypatch.delenv(key, raising=False)                 # undone after the test
    out = tmp_path / "bert.json"
    rc = bert.main(["--smoke", "--backend", "interpreter", "--no-jax", "--json", str(out),
                    "--curve", "3"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    (row,) = json.loads(out.read_text())["rows"]
    impls = row["impls"]
    for name in ("xlapy f32", "xlapy bf16"):
        assert impls[name]["status"] == "ok" and impls[name]["median_s"] > 0
        assert "first loss" in impls[name]["detail"]
        assert "DISAGREES" not in impls[name]["detail"]
    if not bert.available("tensorflow"):
        assert not any(name.startswith("tf") for name in impls)
    assert "# xlapy: 3 steps" in printed and "| xlapy bf16 |" in printed


def test_problem_is_deterministic_and_labels_are_the_unmasked_tokens():
    cfg = bert.SMOKE
    a, b = bert.problem(cfg), bert.problem(cfg)
    for x, y in zip(a[0].values(), b[0].values()):
        assert (x == y).all()
    tokens, labels = a[4], a[5]
    truth = labels.argmax(-1)
    masked = tokens == 0
    assert (tokens[~masked] == truth[~masked]).all() and 0 < masked.mean() < 0.5
