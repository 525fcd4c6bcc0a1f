"""Helpers for the tests and benchmarks (never imported by the app): synthetic graphs of any size."""
