"""Measuring: runs under the profiling runtime (runner), the GC schedule's
spread (schedule), exact or sampled (exact_or_sampled), the snapshot run
and retaining paths (retention), and profiling's overhead: counted under
cachegrind (cachegrind, with nothreads), timed (overhead_time), its peak
RSS (overhead_rss), the record and its threshold (overhead; the verdict is
decide/overhead_verdict's) and when a count carries (overhead_carry)."""
