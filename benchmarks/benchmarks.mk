# benchmarks.mk -- builds the bundled memprof-ci benchmark programs.
#
# Include it from the top Makefile (`include benchmarks/benchmarks.mk`) or use
# it standalone from the repository root:
#   make -f benchmarks/benchmarks.mk                     # = benchmarks
#   make -f benchmarks/benchmarks.mk OCAMLOPT=/path/to/ocamlopt
#
# Targets:
#   benchmarks               _build/benchmarks/<name>.exe for every name
#   benchmarks-ocamltracker  _build/benchmarks/ocamltracker/<name>.exe: the
#                            same programs linked with ocaml_tracker first
#   benchmarks-clean         removes _build/benchmarks
#
# Every object depends on the compiler binary, so rebuilding the (patched)
# compiler rebuilds the benchmarks.

# Directory of this file, captured at include time.
BENCH_SRC := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
# When included, leave the including Makefile's default goal alone (restored
# at the end of this file); standalone, `benchmarks` is the default goal.
BENCH_INCLUDED := $(filter-out $(lastword $(MAKEFILE_LIST)),$(MAKEFILE_LIST))
BENCH_SAVED_GOAL := $(.DEFAULT_GOAL)
ROOT ?= $(abspath $(BENCH_SRC)/..)

OCAMLOPT ?= $(ROOT)/_build/runtime/bin/ocamlopt
BENCH_OCAMLFLAGS ?= -g
BENCH_BUILD ?= $(ROOT)/_build/benchmarks

# One program per name: benchmarks/<name>.ml -> _build/benchmarks/<name>.exe
BENCH_NAMES := lists stackmap closures strings hashtables mapset floats \
  major_arrays marshal_rt bigarrays leak promote domains systhreads bdd

# Extra compile/link flags per program.
BENCH_FLAGS_systhreads := -I +unix -I +threads
BENCH_LIBS_systhreads := unix.cmxa threads.cmxa

# The compiler as a make prerequisite: a path is used as is, a bare command
# name is resolved through PATH (empty if not found: no dependency then).
BENCH_OCAMLOPT_DEP := $(if $(findstring /,$(OCAMLOPT)),$(OCAMLOPT),$(shell command -v $(OCAMLOPT) 2>/dev/null))

BENCH_OBJ := $(BENCH_BUILD)/obj
BENCH_EXES := $(addprefix $(BENCH_BUILD)/,$(addsuffix .exe,$(BENCH_NAMES)))
BENCH_TRACKER_EXES := $(addprefix $(BENCH_BUILD)/ocamltracker/,$(addsuffix .exe,$(BENCH_NAMES)))

.PHONY: benchmarks benchmarks-ocamltracker benchmarks-clean

# Objects are shared by both link variants: never delete them as intermediates.
.SECONDARY: $(addprefix $(BENCH_OBJ)/,$(addsuffix .cmx,$(BENCH_NAMES) memprof_tracker))

benchmarks: $(BENCH_EXES)

benchmarks-ocamltracker: $(BENCH_TRACKER_EXES)

benchmarks-clean:
	rm -rf $(BENCH_BUILD)

$(BENCH_OBJ) $(BENCH_BUILD)/ocamltracker:
	mkdir -p $@

# Compile each program to its own object in _build (keeps benchmarks/ clean).
$(BENCH_OBJ)/%.cmx: $(BENCH_SRC)/%.ml $(BENCH_OCAMLOPT_DEP) | $(BENCH_OBJ)
	$(OCAMLOPT) $(BENCH_OCAMLFLAGS) $(BENCH_FLAGS_$*) -I $(BENCH_OBJ) -c -o $@ $<

$(BENCH_OBJ)/memprof_tracker.cmx: $(BENCH_SRC)/ocaml_tracker/memprof_tracker.ml $(BENCH_OCAMLOPT_DEP) | $(BENCH_OBJ)
	$(OCAMLOPT) $(BENCH_OCAMLFLAGS) -c -o $@ $<

$(BENCH_BUILD)/%.exe: $(BENCH_OBJ)/%.cmx $(BENCH_OCAMLOPT_DEP)
	$(OCAMLOPT) $(BENCH_OCAMLFLAGS) $(BENCH_FLAGS_$*) $(BENCH_LIBS_$*) -o $@ $<

# Tracker first on the link line, so its initialiser runs before the program.
$(BENCH_BUILD)/ocamltracker/%.exe: $(BENCH_OBJ)/memprof_tracker.cmx $(BENCH_OBJ)/%.cmx $(BENCH_OCAMLOPT_DEP) | $(BENCH_BUILD)/ocamltracker
	$(OCAMLOPT) $(BENCH_OCAMLFLAGS) $(BENCH_FLAGS_$*) $(BENCH_LIBS_$*) -o $@ $(BENCH_OBJ)/memprof_tracker.cmx $(BENCH_OBJ)/$*.cmx

ifneq ($(strip $(BENCH_INCLUDED)),)
.DEFAULT_GOAL := $(BENCH_SAVED_GOAL)
endif
