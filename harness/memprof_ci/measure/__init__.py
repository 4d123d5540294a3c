"""Measuring: runs under the profiling runtime (runner), the GC schedule's
spread (schedule), exact or sampled (exact_or_sampled), the snapshot run
and retaining paths (retention), and profiling's overhead: counted
(overhead: the record and its threshold; the verdict is
decide/overhead_verdict's), timed (overhead_time), its peak RSS
(overhead_rss) and when a count carries or is estimated
(overhead_carry), all measured through the overhead library in drivers/
(hyperfine, cachegrind with nothreads, peak_rss), which the overhead
study shares."""
