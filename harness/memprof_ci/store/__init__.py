"""What is kept between runs: baselines (baseline), run directories of
`profile --out` (run_dirs), a check's measurements in baseline format
(measured) and the run records of main (run_records)."""
