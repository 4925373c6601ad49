# The attention textbook. Needs only Python 3.11+ and make:
#   make lab    set up (if needed) and open the book in JupyterLab
#   make test   set up (if needed) and run every check
PYTHON ?= python3
VENV   := .venv
BIN    := $(abspath $(VENV)/bin)
STAMP  := $(VENV)/.installed
# nbgrader calls alembic by name; the venv's jupyter must find the venv's kernel first.
export PATH := $(BIN):$(PATH)
export JUPYTER_PREFER_ENV_PATH := 1
# Idle OpenMP threads sleep instead of spinning: with two test workers (or any other load) on
# two cores, spinning threads made small torch ops 15-70x slower. Numerics are unchanged.
export OMP_WAIT_POLICY ?= PASSIVE
LAB_ARGS ?=
LAB_DIR  ?= notebooks
# Jupyter refuses to run as root (containers, CI) unless told it may.
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root,)
PYTEST_ARGS ?=
# JupyterLab as the book wants it (files in jupyter/, copied into $(VENV) by `make install`): no news
# or update pop-up, and notebook trust signatures kept in $(VENV) rather than in your home.
LAB_CONFIG := $(VENV)/share/jupyter/lab/settings/overrides.json \
  $(VENV)/etc/jupyter/jupyter_server_config.py $(VENV)/etc/jupyter/jupyter_notebook_config.py

.PHONY: help install lab test lint format clean lock execute

help:
	@echo "make lab          set up and start JupyterLab on notebooks/"
	@echo "make test         set up and run lint, unit tests and every notebook (nbval)"
	@echo "make lint         ruff over attnlib/, tests/, the notebooks, assignments/, scripts/"
	@echo "make install      build $(VENV) from requirements.lock (a no-op when up to date)"
	@echo "make execute      re-run every notebook in place (after changing attnlib: notebooks show its source)"
	@echo "make book         build the static website into build/book/"
	@echo "make assignments  write the student versions to build/assignments/release/"
	@echo "make grade        autograde SUBMISSIONS=folder (default build/submitted) -> build/grades/"
	@echo "make quality      train every translation model over 3 seeds -> results/quality.md"
	@echo "make bench        time attnlib against PyTorch and d2l -> results/bench.md"
	@echo "make lock         re-resolve requirements.in into requirements.lock"
	@echo "make clean        remove $(VENV) and build outputs"

install: $(STAMP) $(LAB_CONFIG)

$(STAMP): requirements.lock pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "error: Python 3.11 or newer is needed (found $$($(PYTHON) --version))."; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade "pip>=24"
	$(VENV)/bin/python -m pip install --quiet --no-deps -r requirements.lock
	$(VENV)/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(VENV)/bin/python -m ipykernel install --sys-prefix --name python3 \
	  --display-name "Python 3 (attention book)" >/dev/null
	touch $@

$(VENV)/share/jupyter/lab/settings/overrides.json: jupyter/overrides.json $(STAMP)
	mkdir -p $(@D) && cp $< $@

$(VENV)/etc/jupyter/%_config.py: jupyter/jupyter_config.py $(STAMP)
	mkdir -p $(@D) && cp $< $@

# Signs the book's own chapters (no other notebook) so that JupyterLab shows their saved widgets on
# open; `jupyter trust` only records a signature, it never rewrites a notebook.
lab: install
	@$(BIN)/jupyter trust --log-level=WARN notebooks/[0-9][0-9]_*.ipynb >/dev/null
	$(BIN)/jupyter lab --ServerApp.root_dir=$(LAB_DIR) $(ROOT_ARGS) $(LAB_ARGS)

lint: install
	$(BIN)/ruff check attnlib tests notebooks assignments scripts

format: install
	$(BIN)/ruff format attnlib tests
	$(BIN)/ruff check --fix attnlib tests notebooks

execute: install
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.kernel_name=python3 \
	  --ExecutePreprocessor.timeout=600 notebooks/[0-9][0-9]_*.ipynb

test: install book-deps lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Train every chapter's model (3 seeds) and write results/quality.md and .json (about 15 min).
.PHONY: quality
quality: install
	$(BIN)/python scripts/quality.py

# Classroom assignments (docs/instructors.md): student versions, then autograding.
SUBMISSIONS ?= build/submitted
.PHONY: assignments grade
assignments: install
	$(BIN)/python scripts/assignments.py generate --out build/assignments

grade: install
	$(BIN)/python scripts/assignments.py grade $(SUBMISSIONS) --out build/grades

lock:
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/python -m pip install --quiet --upgrade "pip>=24"
	build/lock-venv/bin/python -m pip install --quiet -r requirements.in
	build/lock-venv/bin/python -m pip install --quiet --no-deps d2l==1.0.3
	{ sed -n 1,2p requirements.lock; build/lock-venv/bin/python -m pip freeze --all --exclude-editable \
	  | grep -v -i '^pip=='; } > requirements.lock.new && mv requirements.lock.new requirements.lock
	rm -rf build/lock-venv

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

.PHONY: test-lab
test-lab: install book-deps  ## the book in JupyterLab, in headless Chromium (CH=3: chapter 3 only)
	LAB_CHAPTERS="$(CH)" $(BIN)/python -m pytest -p no:xdist -o addopts="-ra --strict-markers" tests/test_lab.py

.PHONY: bench
bench: install  ## time attnlib against PyTorch and d2l; writes results/bench.{json,md} (python -m bench --quick: faster)
	$(BIN)/python -m bench

# The book as an offline static website in build/book/ (scripts/build_book.py; checked in headless
# Chromium by tests/test_book.py). Set-up, run by `make install`: the `chromium` package on
# Debian/Ubuntu when missing (as root, or with password-less sudo; otherwise a note), a CJK font so
# its screenshots show the glossary's Chinese (fonts-wqy-zenhei), and the pinned MathJax the site
# serves (fetched once from the npm registry, hash-checked, kept in .venv).
.PHONY: book book-deps
book-deps: $(STAMP)
	@pkgs=""; for b in $$CHROME chromium chromium-browser google-chrome google-chrome-stable ""; do \
	  [ -n "$$b" ] && command -v $$b >/dev/null && break; done; \
	[ -n "$$b" ] || pkgs="chromium"; \
	{ command -v fc-list >/dev/null && fc-list :lang=zh | grep -q .; } || pkgs="$$pkgs fonts-wqy-zenhei"; \
	if [ -z "$$pkgs" ]; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkgs; \
	elif command -v apt-get >/dev/null && sudo -n true 2>/dev/null; then \
	  sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkgs; \
	elif [ -z "$$b" ]; then echo "note: no Chrome/Chromium found; tests/test_book.py needs one" \
	  "(Debian/Ubuntu: sudo apt-get install chromium; elsewhere install Chrome and set CHROME)."; fi
	@$(BIN)/python scripts/build_book.py --mathjax-only >/dev/null

book: book-deps  ## build the static website into build/book/ (open build/book/index.html)
	$(BIN)/python scripts/build_book.py
