# Two entry points that work on a fresh machine: `make demo` and `make test`. Both install what they need.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
EXTRAS ?= test,local-llm,annotate,milvus-server,ray
STAMP := $(VENV)/.installed

.PHONY: install system-deps demo test bench clean

$(STAMP): pyproject.toml setup.py constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# the CPU torch wheel first: a plain `torch` would pull gigabytes of CUDA wheels
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

system-deps:
	bash scripts/install_system_deps.sh

demo: install
	HF_HUB_OFFLINE=1 $(VENV)/bin/babelrag demo

test: install system-deps
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

bench: install
	for b in bench/bench_*.py; do echo "== $$b"; HF_HUB_OFFLINE=1 $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist demo-build *.egg-info
