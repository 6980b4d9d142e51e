# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# PyTorch's CPU wheel (the torch extra) for torch.compile(backend="xlapy") and its tests,
# from PyTorch's CPU index (no CUDA libraries); where that index cannot be reached pip
# gives up on it at once and uses the others. The tests skip when torch is absent.
TORCH_INDEX := https://download.pytorch.org/whl/cpu

.PHONY: demo test lint venv clean aot-example aot-digits proto

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q --retries 0 --timeout 30 -e '.[torch]' \
		--extra-index-url $(TORCH_INDEX) \
		|| echo "torch not installed: tests/test_torch_compile.py will skip"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py
	$(PY) examples/keras_digits.py

# a model compiled ahead of time, linked into a C program (examples/aot)
aot-example: $(STAMP)
	$(MAKE) -C examples/aot PY=$(abspath $(PY))

# the demo's digits CNN exported ahead of time, its classes checked against the JIT model
aot-digits: $(STAMP)
	$(MAKE) -C examples/aot digits PY=$(abspath $(PY))

test: $(STAMP)
	$(PY) -m pytest -q -n 2

# ruff and mypy on the core packages (settings in pyproject.toml; tests/test_lint.py too)
LINT_PATHS := xlapy/hlo xlapy/passes xlapy/backends

lint: $(STAMP)
	$(PY) -m ruff check $(LINT_PATHS)
	$(PY) -m mypy

# regenerate xlapy/hlo/proto/xlapy_hlo_pb2.py from xlapy_hlo.proto (needs grpcio-tools; the
# generated file is committed, so this is only needed after editing the .proto)
proto: $(STAMP)
	$(PY) -m pip install -q grpcio-tools
	cd xlapy/hlo/proto && ../../../$(PY) -m grpc_tools.protoc -I. --python_out=. --pyi_out=. xlapy_hlo.proto

clean:
	rm -rf $(VENV) build *.egg-info
