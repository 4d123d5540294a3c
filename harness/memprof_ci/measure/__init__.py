"""Measuring: runs under the profiling runtime (runner), the GC schedule's
spread (schedule), exact or sampled (exact_or_sampled), the snapshot run
and retaining paths (retention), and profiling's overhead: counted
(overhead, with overhead_carry deciding when a count carries or is
estimated), timed
(overhead_time) and its peak RSS (overhead_rss), all three through the
overhead library in drivers/ (hyperfine, cachegrind with nothreads,
peak_rss), which the overhead study shares."""
