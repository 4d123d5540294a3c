"""The overhead study of memprof-ci (`make bench-overhead`).

Measures what profiling costs, for every benchmark of the manifest:

1. wall time (hyperfine -N) of the patched runtime's built-in C tracker
   (OCAMLMEMPROF=rate=R,seed=1,frames=F,out=<tmp>) against the same binary
   with OCAMLMEMPROF unset, and of the OCaml-level Gc.Memprof tracker
   (_build/benchmarks/ocamltracker/<name>.exe with OCAMLMEMPROF_OCAML_RATE=R
   and OCAMLMEMPROF_OCAML_OUT=<tmp>, so that it too writes a per-stack
   profile at exit) against that binary with the variables unset, for each
   rate (default 1e-5, 1e-4, 1e-3, 1e-2); plus the cost per sample at 1e-2
   of both trackers and their ratio, and the C tracker's wall time per
   sample at every rate, reported beside its instructions per sample;
2. instruction counts (valgrind --tool=callgrind, "Collected : N") at the
   suite's size (--callgrind-scale): C tracker at 1e-4 against off, and the
   stock-built binary against the patched-built binary with OCAMLMEMPROF
   unset; plus the per-sample cost at 1e-2 of both trackers in instructions
   (a deterministic cross-check of the noisy wall-time one);
3. a report in --out: overhead.md (tables and a PASS/MISS summary against
   the study's targets), overhead.json (every raw number) and overhead.svg
   (overhead against rate, drawn by hand).

One module per job, each stating its own invariants:

    common        fixed parameters, targets, rate keys, errors, progress log
    programs      the three builds of a benchmark and the environment they run in
    timing        phase 1: preflight runs and interleaved hyperfine rounds
    instructions  phase 2: callgrind runs and their per-benchmark ratios
    analysis      paired intervals, per-sample costs, the summary's verdicts
    render_md     overhead.md
    plot_svg      overhead.svg
    cli           options, the run, --reanalyse, writing the three outputs

Beside the study, two modules run as scripts measure one program at one
rate: pairs (paired wall and CPU time, `python3 -m overhead.pairs`) and
counts (the overhead check's counted runs, `python3 -m overhead.counts`);
script_args checks the command line they share.

Invariants of the whole study:

* Overhead = median over the rounds of one invocation of on / off - 1,
  the runs of a round paired; never a single absolute time.
* Every run is made, and every interval computed, by the overhead library
  the gate's overhead check uses (memprof_ci.measure.drivers: hyperfine,
  cachegrind, peak_rss; memprof_ci.decide.stats.paired_overhead_interval);
  no module here times, counts or resamples a run itself.
* Verdicts are computed from the measured numbers at report time; no target
  outcome is written in advance.  A quantity that was not measured is
  reported as n/a, never as PASS.
* `--reanalyse overhead.json` recomputes analysis, verdicts and report from
  a run's raw times and counts without running anything.
* A missing binary or tool is an error before anything runs: one line on
  stderr naming the make target, exit status 2.  A benchmark that fails
  while being measured is recorded in the outputs and the study exits 2
  after writing them.

Usage: the package and the harness are imported as packages, with
harness/ and benchmarks/ on PYTHONPATH (no module edits sys.path); from
the repository root:

    PYTHONPATH=harness:benchmarks /usr/bin/python3 -m overhead \\
        --manifest benchmarks/benchmarks.toml --out _build/overhead \\
        [--only a,b] [--rates 1e-4,1e-2] [--runs 5] [--warmup 1] \\
        [--no-callgrind] [--quick] [--reanalyse overhead.json]
    PYTHONPATH=harness:benchmarks /usr/bin/python3 -m overhead.pairs PROGRAM 'ARGS' RATE PAIRS
    PYTHONPATH=harness:benchmarks /usr/bin/python3 -m overhead.counts PROGRAM 'ARGS' RATE RUNS

(from another directory, absolute paths in PYTHONPATH).  The study needs
the harness's dependencies (scipy, for the interval).
"""
