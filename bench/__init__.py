"""Benchmarks: each ``bench/bench_*.py`` prints ratios against a reference measured in the same run."""
