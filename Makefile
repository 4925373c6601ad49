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
# The Chinese edition: `make lab LANG=zh`, `make assignments LANG=zh` (docs/translating.md). Only LANG
# given on the command line picks it; the locale in your environment (LANG=zh_CN.UTF-8, ...) does not,
# and the commands run with that locale, not with LANG=zh.
ifeq ($(origin LANG),command line)
BOOK_LANG := $(if $(filter zh zh_CN zh-CN,$(LANG)),zh,en)
override LANG := $(shell sh -c 'echo "$${LANG:-C.UTF-8}"' </dev/null)
else
BOOK_LANG := en
endif
LAB_DIR  ?= $(if $(filter zh,$(BOOK_LANG)),build/zh/notebooks,notebooks)
# Jupyter refuses to run as root (containers, CI) unless told it may.
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root,)
PYTEST_ARGS ?=
# JupyterLab as the book wants it (files in jupyter/, copied into $(VENV) by `make install`): no news
# or update pop-up, and notebook trust signatures kept in $(VENV) rather than in your home.
LAB_CONFIG := $(VENV)/share/jupyter/lab/settings/overrides.json \
  $(VENV)/etc/jupyter/jupyter_server_config.py $(VENV)/etc/jupyter/jupyter_notebook_config.py

.PHONY: help install lab test lint format clean lock execute explorers

help:
	@echo "Reading and running the book:"
	@echo "  make lab          set up (if needed) and start JupyterLab on notebooks/"
	@echo "                    options: make lab LAB_ARGS=\"--port 8890 --no-browser\""
	@echo "  make book         build the static website into build/book/ (open build/book/index.html)"
	@echo "  make onnx         export the live models the site runs in the browser (build/live/; make book does it)"
	@echo "  make diagrams     draw the diagrams (diagrams/) into SVG, both editions, and refresh the chapters' copies"
	@echo "Chinese edition (中文版, docs/translating.md):"
	@echo "  make lab LANG=zh  generate the Chinese notebooks into build/zh/notebooks/ and open them"
	@echo "  make book         also builds the Chinese site, build/book/zh/index.html"
	@echo "  make i18n         update the catalogues locale/zh_CN/LC_MESSAGES/*.po from the English"
	@echo "  make i18n-check   list what is untranslated, fuzzy or out of date (CAT=01_attention_cues.po)"
	@echo "Checks:"
	@echo "  make test         everything (about 25 min on 2 cores): lint, unit tests, every notebook and"
	@echo "                    assignment (strict nbval, attnlib from its wheel), JupyterLab, both websites"
	@echo "  make test-fast    lint and the unit tests only (about 3 min): the loop while you edit"
	@echo "                    options: make test PYTEST_ARGS=\"tests/test_bench.py\""
	@echo "  make test-lab CH=N  run the JupyterLab browser test for one chapter"
	@echo "  make test-float-paths  training tests, chapters and assignments with the plainest CPU kernels"
	@echo "                    (part of make test)"
	@echo "  make lint         ruff over attnlib/, tests/, the notebooks, assignments/ and the packages"
	@echo "  make format       ruff format attnlib/ and tests/, then ruff's safe fixes"
	@echo "Measurements (rewrite committed files in results/):"
	@echo "  make quality      train every translation model over 3 seeds -> results/quality.md"
	@echo "                    (and attnlib/quality.json, the numbers chapters 4 and 7 quote)"
	@echo "  make models       train the Transformers that ship with attnlib -> attnlib/pretrained/"
	@echo "  make reproducibility  retrain them with other CPU kernels -> results/reproducibility.json"
	@echo "  make bench        time attnlib against PyTorch and d2l -> results/bench.md"
	@echo "                    (python -m bench --quick: a short check that writes build/bench-quick/)"
	@echo "For instructors (docs/instructors.md; COURSE=folder, default build/assignments):"
	@echo "  make assignments  build or update the course: student versions in COURSE/release/, the gradebook"
	@echo "                    (LANG=zh: the Chinese ones, COURSE default build/assignments-zh)"
	@echo "  make grade        grade COURSE/submitted in the sandbox into the gradebook [JOBS=N FORCE=1"
	@echo "                    STUDENT=id ASSIGNMENT=name] -> reports in COURSE/grading/"
	@echo "  make export       the grades for the LMS: LMS=canvas|moodle|csv -> COURSE/grading/LMS.csv"
	@echo "                    [ASSIGNMENTS=\"a b\"] [PARTIAL=1: answers still to grade by hand left empty]"
	@echo "  make feedback     generate (and release) again the feedback a regrade made stale"
	@echo "  make formgrader   JupyterLab on COURSE with nbgrader's formgrader (manual grading, feedback)"
	@echo "Set-up and maintenance:"
	@echo "  make install      build $(VENV) from requirements.lock (a no-op when up to date)"
	@echo "  make system-deps  apt-get chromium and fonts-wqy-zenhei for the website test (sudo unless root)"
	@echo "  make execute      re-run every notebook in place (after changing attnlib: notebooks show its source)"
	@echo "                    one chapter: make execute NB=notebooks/04_bahdanau_attention.ipynb"
	@echo "  make explorers    draw every state of the chapters' widgets for the website (book/explorers/);"
	@echo "                    run it after changing a chapter with a widget [NB=notebooks/NN_x.ipynb]"
	@echo "  make dist         attnlib's sdist and wheel -> dist/ (offline), to run the book elsewhere (README)"
	@echo "  make lock         re-resolve requirements.in into requirements.lock"
	@echo "  make clean        remove $(VENV) and build outputs"

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
ifeq ($(BOOK_LANG),zh)
	$(BIN)/python -m book.i18n generate
	@$(BIN)/jupyter trust --log-level=WARN build/zh/notebooks/[0-9][0-9]_*.ipynb >/dev/null
else
	@$(BIN)/jupyter trust --log-level=WARN notebooks/[0-9][0-9]_*.ipynb >/dev/null
endif
	$(BIN)/jupyter lab --config=book/lab_config.py --ServerApp.root_dir=$(LAB_DIR) $(ROOT_ARGS) $(LAB_ARGS)

lint: install
	$(BIN)/ruff check attnlib tests notebooks assignments scripts diagrams coursegrader bench book

format: install
	$(BIN)/ruff format attnlib tests
	$(BIN)/ruff check --fix attnlib tests notebooks

# Like `jupyter nbconvert --execute --inplace`, without the kernels' shutdown and TCP noise
# (scripts/execute.py says why). One chapter: make execute NB=notebooks/04_bahdanau_attention.ipynb
# With PyTorch's AVX2 CPU kernels (AVX2_CPU), those that trained the shipped weights and drew chapter
# 4's committed explorer states: a chapter that trains a model then trains the same one again (with a
# CPU's own AVX-512 kernels chapter 4's explorer states came out up to 0.045 apart).
NB ?=
execute: install
	$(AVX2_CPU) $(BIN)/python scripts/execute.py $(NB)

# Every state of every chapter widget made with attnlib.explorer.explorable, drawn by the kernel
# into book/explorers/ (the website's data; docs/book.md). tests/test_explorer.py names the
# chapters whose states are stale. One chapter: make explorers NB=notebooks/02_attention_pooling.ipynb
explorers: install
	$(AVX2_CPU) $(BIN)/python scripts/execute.py --explorers $(NB)

# Everything, once (docs/testing.md): lint; the unit tests; every chapter and assignment source
# under nbval, executed once, in the kernel scripts/kernels.py writes (attnlib from its wheel, the
# plainest CPU kernels); every chapter's Run All in JupyterLab (the reader's own kernels); both
# websites in Chromium; the course. The Chinese notebooks are not run again: tests/test_i18n.py
# proves they share every code cell and output with the English ones. The training tests run with
# the plainest CPU kernels too (test-float-paths' first half). Both sites are built first, so that
# the browser tests (several workers) find them up to date.
TEST_KERNEL := build/test-kernel
# One xdist worker per core. Four were tried (much of the suite waits on a browser, a server or a
# subprocess) and were no faster on 2 cores: 24 min of pytest, against 20 with two (docs/testing.md).
TEST_WORKERS ?= 2
TEST_KERNEL_ENV = JUPYTER_PATH=$(abspath $(TEST_KERNEL))/share/jupyter ATTNBOOK_KERNEL=attnbook-wheel
test: install book-deps lint
ifeq ($(PYTEST_ARGS),)
	@mkdir -p build; echo "The training tests start first and run beside the rest (log: build/test-training.log, shown at the end)."
	@$(PLAIN_CPU) $(BIN)/python -m pytest -n 0 tests/test_training.py >build/test-training.log 2>&1 & \
	  training=$$!; trap 'kill $$training 2>/dev/null' INT TERM; \
	  set -x; $(BIN)/python scripts/kernels.py $(TEST_KERNEL) $(PLAIN_CPU) && \
	  $(BIN)/python -m book.i18n generate && \
	  $(BIN)/python -m book.build && \
	  $(BIN)/python -m book.build --lang zh && \
	  $(TEST_KERNEL_ENV) $(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=25 \
	    --ignore=tests/test_training.py tests notebooks assignments/source; rest=$$?; set +x; \
	  wait $$training; trained=$$?; \
	  echo; echo "== tests/test_training.py (the plainest CPU kernels), run beside the rest:"; \
	  tail -n 30 build/test-training.log; \
	  [ $$rest = 0 ] && [ $$trained = 0 ]
else
	$(BIN)/python scripts/kernels.py $(TEST_KERNEL) $(PLAIN_CPU)
	$(BIN)/python -m book.i18n generate
	$(TEST_KERNEL_ENV) $(BIN)/python -m pytest $(PYTEST_ARGS)
endif

# The quick loop while changing the book (about 2-3 minutes on 2 cores): lint and the unit tests;
# no notebook, no browser, no wheel, no course (those are the tests marked slow).
.PHONY: test-fast
test-fast: install lint
	$(BIN)/python -m pytest -m "not slow" tests

# The catalogues of the Chinese edition (book/i18n.py, docs/translating.md).
CAT ?=
.PHONY: i18n i18n-check
i18n: install
	$(BIN)/python -m book.i18n update $(CAT)

i18n-check: install
	$(BIN)/python -m book.i18n check $(CAT)

# The checks whose numbers depend on the CPU's float path, with the plainest CPU kernels: a check
# tied to one kind of CPU fails here, not on a reader's laptop (docs/reproducibility.md). `make test`
# runs both halves (the notebooks in its one nbval run); this target runs them alone.
PLAIN_CPU := ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2
# PyTorch's AVX2 CPU kernels (on an x86 CPU that has them): those that wrote the shipped weights
# (make models, docs/reproducibility.md), and one of make reproducibility's three sets.
AVX2_CPU := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
.PHONY: test-float-paths
test-float-paths: install
	$(PLAIN_CPU) $(BIN)/python -m pytest tests/test_training.py
	$(BIN)/python scripts/kernels.py $(TEST_KERNEL) $(PLAIN_CPU)
	$(TEST_KERNEL_ENV) $(BIN)/python -m pytest notebooks assignments/source

# Retrain the shipped Transformers with three sets of CPU kernels and record how far each lands from
# the shipped run (results/reproducibility.json; docs/reproducibility.md quotes it). About 6 minutes.
.PHONY: reproducibility
reproducibility: install
	$(PLAIN_CPU) $(BIN)/python scripts/reproducibility.py default
	$(AVX2_CPU) $(BIN)/python scripts/reproducibility.py avx2
	$(BIN)/python scripts/reproducibility.py native

# Train every chapter's model (3 seeds) and write results/quality.md and attnlib/quality.json (the
# measurements chapters 4 and 7 quote, shipped with attnlib): the generated corpus
# about 10 min and the real sentences about 35 min of one CPU core, then d2l's 600-pair experiment.
.PHONY: quality
quality: install
	$(BIN)/python scripts/quality.py

# The weights that ship with attnlib (attnlib/pretrained/): chapters 5 and 7 load the Transformers
# instead of training them for a minute each on the CPU. Rerun when attnlib changes what training yields.
# Trained with PyTorch's AVX2 CPU kernels (AVX2_CPU), the kernels that wrote the shipped files
# (docs/reproducibility.md): on the CPU measured there they retrain them bit for bit.
.PHONY: models
models: install
	$(AVX2_CPU) $(BIN)/python scripts/pretrain.py

# The course (docs/instructors.md): an nbgrader course directory COURSE, graded in the book's sandbox
# (python -m coursegrader). These targets never delete a submission, a grade or a feedback file.
# Once .venv is built they do not reinstall it (a term is graded with one environment, even after a
# git pull that changes requirements.lock: run `make install` between terms).
COURSE ?= $(if $(filter zh,$(BOOK_LANG)),build/assignments-zh,build/assignments)
SUBMISSIONS ?= $(COURSE)/submitted
COURSE_DEPS := $(if $(wildcard $(STAMP)),,install)
.PHONY: assignments grade export feedback formgrader
assignments: $(COURSE_DEPS)
ifeq ($(BOOK_LANG),zh)
	$(BIN)/python -m book.i18n generate
	$(BIN)/python -m coursegrader generate --lang zh --course $(COURSE)$(if $(FORCE), --force,)
else
	$(BIN)/python -m coursegrader generate --course $(COURSE)$(if $(FORCE), --force,)
endif

# JOBS: pairs graded at once (default: all cores); FORCE=1 grades again the pairs that did not change;
# STUDENT=id, ASSIGNMENT=name: those only; ADD_UNKNOWN=1 adds students missing from the roster;
# NO_SANDBOX=1 grades without bubblewrap.
JOBS ?= 0
GRADE_FLAGS = $(strip $(if $(FORCE),--force) $(if $(STUDENT),--student $(STUDENT)) \
  $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT)) $(if $(ADD_UNKNOWN),--add-unknown) $(if $(NO_SANDBOX),--no-sandbox))
grade: $(COURSE_DEPS)
	$(BIN)/python -m coursegrader grade $(SUBMISSIONS) --course $(COURSE) --jobs $(JOBS) $(GRADE_FLAGS)

# LMS=canvas|moodle|csv: the class's grades -> COURSE/grading/LMS.csv (nbgrader export with the book's plugins);
# the assignments released (or ASSIGNMENTS="a b"); refuses while answers wait for a hand grade unless PARTIAL=1
LMS ?= canvas
export: $(COURSE_DEPS)
	$(BIN)/python -m coursegrader export $(LMS) --course $(COURSE)$(foreach a,$(ASSIGNMENTS), --assignment $(a))$(if $(PARTIAL), --partial,)

# the feedback a regrade made stale, generated again (and released again through the exchange)
feedback: $(COURSE_DEPS)
	$(BIN)/python -m coursegrader feedback --course $(COURSE)

# JupyterLab on the course directory, with nbgrader's formgrader (menu Nbgrader -> Formgrader)
formgrader: $(COURSE_DEPS)
	cd $(COURSE) && PYTHONPATH=$(CURDIR) $(BIN)/jupyter lab --ServerApp.root_dir=$(abspath $(COURSE)) \
	  $(ROOT_ARGS) $(LAB_ARGS)

# attnlib's sdist and wheel in dist/, with the standard `build` front end and the locked setuptools
# (--no-isolation: nothing downloads). The wheel is built from the sdist, so the sdist is complete.
.PHONY: dist
dist: install
	rm -rf dist
	$(BIN)/python -m build --quiet --no-isolation --outdir dist .
	@ls -l dist

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

# The book as an offline static website in build/book/ (the package book/; checked in headless
# Chromium by tests/test_book.py). book-deps fetches the pinned MathJax the site serves and the
# pinned axe-core the browser test runs in every page (once, from the npm registry, hash-checked,
# kept in .venv) and looks for the system packages the browser test
# needs. It installs missing ones only when it runs as root (CI on a fresh Debian machine), saying
# what and why first; otherwise it names them and `make system-deps`. It never calls sudo:
# `make system-deps` does, when you ask for it.
.PHONY: book book-deps system-deps
# Sets $$pkgs to the Debian packages missing here and $$why to what each is for: chromium unless
# $$CHROME or a Chrome/Chromium is on PATH, fonts-wqy-zenhei unless fontconfig knows a Chinese font.
MISSING_PKGS = pkgs=""; why=""; \
  for b in $$CHROME chromium chromium-browser google-chrome google-chrome-stable ""; do \
    [ -n "$$b" ] && command -v $$b >/dev/null && break; done; \
  [ -n "$$b" ] || { pkgs="chromium"; \
    why="chromium: the headless browser in which tests/test_book.py opens every page of the site"; }; \
  { command -v fc-list >/dev/null && fc-list :lang=zh | grep -q .; } || { \
    pkgs="$$pkgs fonts-wqy-zenhei"; why="$${why:+$$why; }fonts-wqy-zenhei: a Chinese font, so that \
the page screenshots show the glossary's Chinese"; }; \
  pkgs=$$(echo $$pkgs)

book-deps: $(STAMP)
	@$(MISSING_PKGS); \
	if [ -z "$$pkgs" ]; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  echo "book-deps: installing $$pkgs with apt-get (running as root). $$why."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkgs; \
	else echo "note: missing $$pkgs ($$why). The book builds without them; to install them run" \
	  "'make system-deps' (Debian/Ubuntu), or install Chrome/Chromium and set CHROME=/path/to/it."; fi
	@$(BIN)/python -m book.build --deps-only >/dev/null

system-deps:  ## install the system packages the browser test needs (Debian/Ubuntu; sudo unless root)
	@$(MISSING_PKGS); \
	if [ -z "$$pkgs" ]; then echo "system-deps: nothing to install (Chrome/Chromium and a Chinese font are here)."; exit 0; fi; \
	command -v apt-get >/dev/null || { echo "system-deps: no apt-get here; install these with your" \
	  "package manager (or install Chrome and set CHROME): $$why."; exit 1; }; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; \
	else echo "system-deps: run it as root (no sudo here)."; exit 1; fi; \
	echo "system-deps: installing $$pkgs with $${sudo:+sudo }apt-get. $$why."; \
	$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkgs

# The diagrams (diagrams/, docs/diagrams.md): SVG in both editions, and the chapters' diagram cells
# (which carry the SVG itself, so a chapter shows them wherever it goes). Writes only what changed.
.PHONY: diagrams
diagrams: install
	$(BIN)/python scripts/render_diagrams.py

# The live models of the website (book/live.py): chapter 7's shipped Transformer exported to ONNX,
# with ONNX Runtime Web, into build/live/; again only when their recipe changed. The site build runs
# it too; shipped weights of another recipe (attnlib's training code changed) stop it.
.PHONY: onnx
onnx: book-deps
	$(BIN)/python -m book.live

book: book-deps diagrams  ## build the static website into build/book/ and the Chinese one into build/book/zh/
	$(BIN)/python -m book.build
	$(BIN)/python -m book.i18n generate
	$(BIN)/python -m book.build --lang zh
