"""The overhead library: one driver per way of measuring what a run costs,
shared by the gate's overhead check (measure/overhead*.py) and the overhead
study (benchmarks/overhead, imported as `memprof_ci.measure.drivers`):

    hyperfine   timed runs: rounds of one hyperfine call each, interleaved
    cachegrind  counted runs under valgrind (cachegrind or callgrind), with
    nothreads   the launcher that refuses thread creation for them
    peak_rss    a run's peak resident set size, reaped with wait4

The interval of a paired overhead is decide.stats.paired_overhead_interval,
the one method both use.  The drivers run commands and read what the tools
report; they decide nothing and know no benchmark or manifest.
"""
