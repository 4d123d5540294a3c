"""memprof-ci: catch allocation regressions in OCaml programs before they merge.

The package reads per-run allocation profiles written by the patched OCaml
runtime, groups them into code-motion-robust sites, compares them against
stored baselines with exact Poisson tests and reports through pytest.
Invariant: importing the package has no side effects and needs only the
standard library (scipy and pytest are imported by the modules that use them).
"""

__version__ = "0.1.0"
