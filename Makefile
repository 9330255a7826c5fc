# Two entry points that work on a fresh machine: `make demo` and `make test`. Both install what they need.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
EXTRAS ?= test,local-llm,annotate,milvus-server,ray
STAMP := $(VENV)/.installed

.PHONY: install system-deps demo test bench clean

# llama-cpp-python ships as an sdist only. A native build (-march=native) can emit instructions the CPU
# advertises but the kernel does not enable (AMX tiles in a VM: a general protection fault on the first
# request), and pip's wheel cache would hand such a wheel to every later install. So it is built portable
# (GGML_NATIVE=OFF: AVX2/FMA/F16C) and never taken from, or put into, the wheel cache.
LLAMA_CPP := llama-cpp-python[server]==0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF

$(STAMP): pyproject.toml setup.py constraints.txt Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# the CPU torch wheel first: a plain `torch` would pull gigabytes of CUDA wheels
	$(PIP) install -q -c constraints.txt torch==2.13.0
	case ",$(EXTRAS)," in *,local-llm,*) \
	  grep -qxF -- '$(LLAMA_CPP) $(LLAMA_CMAKE_ARGS)' $(VENV)/.llama-cpp-build 2>/dev/null || { \
	    echo "building $(LLAMA_CPP) with $(LLAMA_CMAKE_ARGS) (~6 min on 2 cores)"; \
	    CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install -q --no-cache-dir --force-reinstall --no-deps '$(LLAMA_CPP)' && \
	    echo '$(LLAMA_CPP) $(LLAMA_CMAKE_ARGS)' > $(VENV)/.llama-cpp-build; } ;; esac
	$(PIP) install -q -c constraints.txt -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

system-deps:
	bash scripts/install_system_deps.sh

demo: install
	HF_HUB_OFFLINE=1 $(VENV)/bin/babelrag demo

# Two test files at a time (pytest-xdist): alone the suite keeps about one of CI's two cores busy (it waits on
# servers, subprocesses and I/O). --dist loadfile: a file is the unit a worker takes, so its module fixtures
# (servers, builds) are set up once and its tests run in order. Files with slow or Argilla tests go first
# (tests/conftest.py; --no-loadscope-reorder keeps that order) so that the two workers finish together.
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: install system-deps
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25

bench: install
	for b in bench/bench_*.py; do echo "== $$b"; HF_HUB_OFFLINE=1 $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist demo-build *.egg-info
