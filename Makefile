# memprof-ci: catch allocation regressions in OCaml programs before they merge.
#
#   make check-alloc       build what is needed, profile the benchmarks, compare
#                          against baselines/ (exit 0 pass, 1 regression, 2 error)
#   make update-baselines  accept the current allocation behaviour
#   make test              the project's own test suite
#   make runtime           the patched OCaml 5.4.1 in _build/runtime (cached);
#                          OCAML_VERSION=5.3.0 builds 5.3.0 into
#                          _build/runtime-5.3.0 instead
#   make test-runtime      the runtime's own tests (runtime-patch/tests) on
#                          OCAML_VERSION's runtime (`make test` runs them on
#                          the default release)
#   make series-report SRC=dir  which patches of the series apply to another
#                          OCaml tree, and which hunks fail (a port's first step)
#   make test-upstream     OCaml's own testsuite (22 runtime-heavy directories)
#                          with the built-in tracker on; not part of `make test`
#   make bench-overhead    the overhead study (not a test)
#   make bench-harness     time the harness's compare path on large profiles
#
# Variables: BENCH=name (narrow check-alloc/update-baselines to benchmarks
# matching a pytest -k expression), BASELINES=dir, AGAINST=ref (check-alloc
# judges the working tree against that git ref, built and profiled in a
# temporary worktree, instead of BASELINES), CHECK_ALLOC_ARGS='...'
# (extra arguments to `memprof-ci check`), TEST_ARGS='...' (extra pytest
# arguments for `make test`).

# Debian's interpreter: python3-pytest and python3-scipy are installed for it,
# and the `python3` first on PATH may be another one that cannot see them.
PYTHON := /usr/bin/python3
ROOT := $(CURDIR)

BASELINES ?= baselines
REPORT_DIR ?= _build/alloc-report
BENCH ?=
AGAINST ?=
CHECK_ALLOC_ARGS ?=
TEST_ARGS ?=

ENSURE_DEPS := harness/scripts/ensure-deps.sh
HARNESS := PYTHONPATH=$(ROOT)/harness $(PYTHON) -m memprof_ci

# The OCaml release: the default one (runtime-patch/patches/default-version)
# builds into _build/runtime, another one into _build/runtime-VERSION.
DEFAULT_OCAML_VERSION := $(shell cat runtime-patch/patches/default-version)
OCAML_VERSION ?= $(DEFAULT_OCAML_VERSION)
export OCAML_VERSION
RUNTIME_DIR := _build/runtime$(if $(filter $(DEFAULT_OCAML_VERSION),$(OCAML_VERSION)),,-$(OCAML_VERSION))
PATCH_ID_FILE := $(RUNTIME_DIR)/patch-id

.PHONY: all runtime stock-runtime test-runtime series-report test-upstream test check-alloc update-baselines bench-overhead bench-harness deps-build \
  deps-python deps-bench deps-lint clean

all: check-alloc

# ---- The patched runtime -------------------------------------------------

RUNTIME_INPUTS := $(shell find runtime-patch/src runtime-patch/patches -type f) \
  runtime-patch/build-runtime.sh runtime-patch/patch-id.sh runtime-patch/fetch-source.sh

runtime: $(PATCH_ID_FILE)

$(PATCH_ID_FILE): $(RUNTIME_INPUTS) | deps-build
	runtime-patch/build-runtime.sh

# OCaml's own tests, run by ocamltest in the build tree `make runtime` keeps,
# with OCAMLMEMPROF=rate=1e-2,seed=1 (UPSTREAM_MEMPROF) and a profile per
# program in _build/test-upstream; UPSTREAM_DIRS narrows it (e.g.
# UPSTREAM_DIRS=statmemprof). Long: about an hour on two cores.
UPSTREAM_MEMPROF ?= rate=1e-2,seed=1
UPSTREAM_DIRS ?=

test-upstream: runtime | deps-python
	$(PYTHON) runtime-patch/upstream_suite.py --memprof '$(UPSTREAM_MEMPROF)' \
	  --tree $(subst runtime,ocaml-src,$(RUNTIME_DIR)) $(UPSTREAM_DIRS)

# The runtime's own tests on OCAML_VERSION's runtime (make test-runtime
# OCAML_VERSION=5.3.0 builds and tests the other supported release).
test-runtime: runtime | deps-python deps-bench deps-lint deps-adopt
	MEMPROF_CI_RUNTIME=$(ROOT)/$(RUNTIME_DIR) MEMPROF_CI_ADOPT_PREFIX=$(ADOPT_PREFIX) \
	  $(PYTHON) -m pytest -q runtime-patch/tests $(TEST_ARGS)

# The series against another OCaml source tree (SRC=dir; LIKE=5.3.0 starts
# from that release's series instead of the default one's).
series-report: | deps-python
	@test -n "$(SRC)" || { echo 'make series-report: say which tree, e.g. SRC=../ocaml-5.5.0' >&2; exit 2; }
	$(PYTHON) runtime-patch/series.py report '$(SRC)' $(if $(LIKE),--like '$(LIKE)')

# Unpatched OCaml (OCAML_VERSION), the reference of the overhead study only.
STOCK_DIR := _build/stock$(if $(filter $(DEFAULT_OCAML_VERSION),$(OCAML_VERSION)),,-$(OCAML_VERSION))
stock-runtime: $(STOCK_DIR)/bin/ocamlopt

$(STOCK_DIR)/bin/ocamlopt: runtime-patch/build-runtime.sh runtime-patch/fetch-source.sh | deps-build
	STOCK=1 runtime-patch/build-runtime.sh

# ---- Dependencies: installed with apt-get when root, else named -----------

deps-build:
	@$(ENSURE_DEPS) build
deps-python:
	@$(ENSURE_DEPS) python
deps-bench:
	@$(ENSURE_DEPS) bench
deps-lint:
	@$(ENSURE_DEPS) lint

# ---- Benchmarks ---------------------------------------------------------

include benchmarks/benchmarks.mk

$(BENCH_EXES) $(BENCH_TRACKER_EXES): $(PATCH_ID_FILE)

# ---- The main job -------------------------------------------------------

HARNESS_SELECT := $(if $(BENCH),-k '$(BENCH)')
# The patched compiler first on PATH: the manifest's `build` of a ref
# checked out by --against compiles with it.
HARNESS_AGAINST := $(if $(AGAINST),--against '$(AGAINST)')

check-alloc: runtime benchmarks | deps-python deps-bench
	PATH=$(ROOT)/_build/runtime/bin:$$PATH MEMPROF_CI_PATCH_ID=$$(cat $(PATCH_ID_FILE)) \
	  $(HARNESS) check --manifest benchmarks/benchmarks.toml \
	  --baselines $(BASELINES) --report-dir $(REPORT_DIR) \
	  $(HARNESS_SELECT) $(HARNESS_AGAINST) $(CHECK_ALLOC_ARGS)

update-baselines: runtime benchmarks | deps-python deps-bench
	MEMPROF_CI_PATCH_ID=$$(cat $(PATCH_ID_FILE)) $(HARNESS) update-baselines \
	  --manifest benchmarks/benchmarks.toml --baselines $(BASELINES) \
	  $(HARNESS_SELECT)

# ---- Tests --------------------------------------------------------------

TEST_DIRS := runtime-patch/tests harness/tests benchmarks/tests .github/scripts/tests

LINTERS_STAMP := _build/ci-linters/node_modules/.installed

# The npm workflow linters, pinned in the script; the workflow tests require
# them when MEMPROF_CI_REQUIRE_LINTERS=1, as here.
$(LINTERS_STAMP): .github/scripts/install-linters.sh | deps-build
	.github/scripts/install-linters.sh _build/ci-linters >/dev/null
	touch $@

test: runtime benchmarks $(LINTERS_STAMP) | deps-python deps-bench deps-lint
	MEMPROF_CI_REQUIRE_LINTERS=1 $(PYTHON) -m pytest -q $(TEST_DIRS) $(TEST_ARGS)

# ---- The overhead study -------------------------------------------------

# The benchmarks built with the stock compiler: the "as fast as stock"
# reference of the study's instruction counts.
STOCK_BENCH_BUILD := $(ROOT)/_build/benchmarks-stock

.PHONY: stock-benchmarks
stock-benchmarks: stock-runtime
	$(MAKE) -f benchmarks/benchmarks.mk OCAMLOPT=$(ROOT)/_build/stock/bin/ocamlopt \
	  BENCH_BUILD=$(STOCK_BENCH_BUILD) benchmarks

# The study is the package benchmarks/overhead; it imports the harness, and
# the overhead library memprof_ci.measure.drivers in it, as packages.
# OVERHEAD_ARGS='...' passes options to it (--only, --runs, --quick...).
bench-overhead: runtime benchmarks benchmarks-ocamltracker stock-runtime stock-benchmarks \
  | deps-python deps-bench deps-lint
	PYTHONPATH=$(ROOT)/harness:$(ROOT)/benchmarks $(PYTHON) -m overhead \
	  --manifest benchmarks/benchmarks.toml --out _build/overhead \
	  --stock-dir $(STOCK_BENCH_BUILD) $(OVERHEAD_ARGS)

# The compare path on 10,000 stacks x 5 seeds; prints CPU and wall time.
bench-harness: | deps-python
	cd harness/tests && PYTHONPATH=$(ROOT)/harness:. $(PYTHON) speed_bench.py 10000

clean:
	rm -rf _build/benchmarks _build/benchmarks-stock _build/alloc-report _build/overhead

# ---- Fuzzing the OCAMLMEMPROF parser ------------------------------------
#
#   make fuzz-env   build runtime-patch/fuzz/fuzz_env.c with libFuzzer, ASan
#                   and UBSan into _build/fuzz and run it for a bounded time;
#                   FUZZ_ENV_ARGS='...' replaces the bound (e.g. -runs=N).
# The target compiles the parser itself (memprof_env_parse.c), not the
# runtime. New inputs go to _build/fuzz/corpus-env; the seed corpus in
# runtime-patch/fuzz/corpus is only read; crashes are saved in _build/fuzz.
# runtime-patch/tests/test_fuzz_env.py builds it through fuzz-env-build.

FUZZ_CC ?= clang
FUZZ_DIR := _build/fuzz
FUZZ_ENV := $(FUZZ_DIR)/fuzz_env
FUZZ_ENV_ARGS ?= -max_total_time=20 -runs=5000000
FUZZ_ENV_SRCS := runtime-patch/fuzz/fuzz_env.c runtime-patch/src/memprof_env_parse.c
FUZZ_CFLAGS := -std=c11 -g -O1 -Wall -Wextra \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -fno-omit-frame-pointer -Iruntime-patch/src

.PHONY: fuzz-env fuzz-env-build
fuzz-env-build: $(FUZZ_ENV)

$(FUZZ_ENV): $(FUZZ_ENV_SRCS) runtime-patch/src/caml/memprof_env_parse.h
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_ENV_SRCS) -o $@

fuzz-env: | deps-lint
	$(MAKE) --no-print-directory fuzz-env-build
	@mkdir -p $(FUZZ_DIR)/corpus-env
	$(FUZZ_ENV) -dict=runtime-patch/fuzz/env.dict -max_len=1024 \
	  -artifact_prefix=$(FUZZ_DIR)/ $(FUZZ_ENV_ARGS) \
	  $(FUZZ_DIR)/corpus-env runtime-patch/fuzz/corpus

# ==== Using the patched compiler in other projects: make install ===========
# (README: "Using the patched compiler: make install, dune, ocamlfind, opam")
#
#   make install PREFIX=/dir  the patched OCaml 5.4.1, configured for /dir and
#                             installed there, plus lib/findlib.conf and the
#                             bin/ocamlfind and bin/dune wrappers that make the
#                             distribution's findlib and dune use it; then put
#                             /dir/bin first on PATH. DESTDIR=/stage stages the
#                             files (still configured for /dir). It is a second
#                             build of the compiler (OCaml 5 bakes its library
#                             path in: a copy of _build/runtime is not
#                             relocatable): 3.5-10 minutes cold on 2 cores
#                             (idle-loaded), reused while PREFIX and the patch
#                             stay the same.
#   make adopt-prefix         the same into _build/adopt/prefix, which the
#                             install and example tests use (make test)
#   make opam-check           the opam compiler package built in a throwaway
#                             opam root, offline (a full compiler build, ~9
#                             minutes on a loaded 2-core machine; not in make test)

PREFIX ?=
DESTDIR ?=
# One adopting prefix per release (_build/adopt for the default one,
# _build/adopt-5.3.0 for 5.3.0): test-runtime's install tests use the
# release they test.
ADOPT_DIR := $(ROOT)/_build/adopt$(if $(filter $(DEFAULT_OCAML_VERSION),$(OCAML_VERSION)),,-$(OCAML_VERSION))
ADOPT_PREFIX := $(ADOPT_DIR)/prefix
ADOPT_STAMP := $(ADOPT_DIR)/installed
INSTALL_INPUTS := $(RUNTIME_INPUTS) runtime-patch/install-tools.sh $(wildcard harness/memprof_ci/*.py harness/memprof_ci/*/*.py)

.PHONY: install adopt-prefix opam-check deps-adopt

install: | deps-build
	@if [ -z "$(PREFIX)" ]; then \
	  echo 'make install: say where, e.g. make install PREFIX=$$HOME/.local/ocaml-memprof' >&2; exit 2; fi
	MEMPROF_CI_PREFIX='$(abspath $(PREFIX))' DESTDIR='$(DESTDIR)' runtime-patch/build-runtime.sh
	DESTDIR='$(DESTDIR)' runtime-patch/install-tools.sh '$(abspath $(PREFIX))'

adopt-prefix: $(ADOPT_STAMP)

$(ADOPT_STAMP): $(INSTALL_INPUTS) | deps-build
	rm -f $@
	MEMPROF_CI_PREFIX=$(ADOPT_PREFIX) DESTDIR= runtime-patch/build-runtime.sh
	DESTDIR= runtime-patch/install-tools.sh $(ADOPT_PREFIX)
	touch $@

deps-adopt:
	@$(ENSURE_DEPS) adopt

opam-check: | deps-build deps-python deps-adopt
	MEMPROF_CI_OPAM_COMPILER=1 $(PYTHON) -m pytest -q runtime-patch/tests/test_opam_compiler.py $(TEST_ARGS)

# make test also runs the install and example tests, on _build/adopt/prefix;
# so does test-runtime (its rule above is read before ADOPT_STAMP is set).
TEST_DIRS += examples/tests
test: $(ADOPT_STAMP) | deps-adopt
test-runtime: $(ADOPT_STAMP)
