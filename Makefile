# make demo | make test | make bench — each bootstraps .venv by itself on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION := 2.15.0
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: demo test bench build lint clean fuzz wheel docs gpu-wheel coverage

# scipy is rustgrad's own dependency (pyproject): the CPU kernels of lgamma, digamma, erfinv, ...
$(VENV)/.base:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.9.4,<2" "numpy>=2" "safetensors>=0.4" "tqdm>=4" "scikit-learn>=1.3" \
		"scipy>=1.10"
	touch $@

# torch is the parity oracle only (rustgrad never imports it); it is large, so it is
# installed once and skipped when the pinned version is already there. The other test
# dependencies are installed again whenever this Makefile changes.
$(VENV)/.test: $(VENV)/.base Makefile
	$(PY) -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$(TORCH_VERSION)')" \
		2>/dev/null || $(PIP) install -q "torch==$(TORCH_VERSION)"
	$(PIP) install -q "pytest>=8" "hypothesis>=6" "ruff>=0.5" "pytest-timeout>=2" "mypy>=1.18" "typing_extensions>=4.15" "pyright[nodejs]>=1.1.400" \
		"auditwheel>=6.1" "ziglang==0.15.2" "PyYAML>=6" "mpich>=4.2" "mpi4py>=4" "ml_dtypes>=0.5" "cupy-cuda13x==14.2.0" \
		"mkdocs==1.6.1" "mkdocstrings==1.0.8" "mkdocstrings-python==2.0.11" "griffelib==2.4.1" \
		"import-linter==2.17"
	touch $@

build: $(VENV)/.base
	$(VENV)/bin/maturin develop --release -q

demo: build
	$(PY) examples/demo.py

test: $(VENV)/.test build
	cargo fmt --all -- --check
	$(VENV)/bin/ruff check python tests benches examples tools
	$(VENV)/bin/lint-imports --no-cache
	cargo test -p rustgrad-core -p rustgrad-kernels
	$(PY) -m pytest -q

# one abi3 wheel for any manylinux2014 x86_64 Linux with CPython >= 3.9 (zig links against
# glibc 2.17), stripped, and the sdist; maturin finds zig on PATH only
wheel: $(VENV)/.base
	$(PIP) install -q "ziglang==0.15.2"
	rm -f dist/rustgrad-*.whl dist/rustgrad-*.tar.gz
	PATH="$(abspath $(VENV))/bin:$$PATH" CARGO_TARGET_DIR=target/wheel $(VENV)/bin/maturin build \
		--release --locked --strip --compatibility manylinux2014 --zig -o dist
	$(VENV)/bin/maturin sdist -o dist

# rustgrad's abi3 wheel, with MPICH's and mpi4py's for CPython 3.12 (the NCCL test's launcher),
# into gpu/wheels/ (git-ignored), for a GPU machine without a registry: bring that folder along
# and run `bash benches/gpu_check.sh` there
MPICH_VERSION := 5.0.2
MPI4PY_VERSION := 4.1.2
gpu-wheel: $(VENV)/.base
	$(PIP) install -q "ziglang==0.15.2"
	rm -rf gpu/wheels && mkdir -p gpu/wheels
	PATH="$(abspath $(VENV))/bin:$$PATH" CARGO_TARGET_DIR=target/wheel $(VENV)/bin/maturin build \
		--release --locked --strip --compatibility manylinux2014 --zig -o gpu/wheels
	$(PIP) download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux1_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
		-d gpu/wheels "mpich==$(MPICH_VERSION)" "mpi4py==$(MPI4PY_VERSION)"

# how much of the installed torch's public surface rustgrad has (tools/api_coverage.py)
coverage: $(VENV)/.test build
	$(PY) tools/api_coverage.py --missing

# the API reference and the guides, into site/ (--strict: a warning fails the build)
docs: $(VENV)/.test build
	$(VENV)/bin/mkdocs build --strict -d site

# the long differential fuzzing profiles (make test runs short deterministic ones): random
# autograd programs, and random pickle opcode sequences around torch tensor records (loaded
# tensors stay inside their storages, clean ones load as torch loads them); then atheris on
# rustgrad.load (whole files, members, torch data.pkl opcodes, the opcode generator's choices)
FUZZ_EXAMPLES ?= 20000
fuzz: $(VENV)/.test build
	RUSTGRAD_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/programs/test_fuzz_programs.py
	RUSTGRAD_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/nn/test_checkpoint_safety.py -k opcode_fuzz
	$(PIP) install -q atheris==2.3.0
	mkdir -p target/fuzz-load
	$(PY) tests/programs/fuzz_load.py -atheris_runs=$(or $(FUZZ_LOAD_RUNS),20000) -artifact_prefix=target/fuzz-load/

# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (set on some machines here) slow current NumPy builds;
# both libraries are measured without them (bars.py sets the thread count of each child itself).
bench: $(VENV)/.test build
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 $(PY) benches/bars.py
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 $(PY) benches/bench_training.py
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 $(PY) benches/bench_explain.py
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 $(PY) benches/bench_ddp.py
	$(PY) benches/bench_launches.py

lint: $(VENV)/.test
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests benches examples tools

clean:
	rm -rf $(VENV) target
