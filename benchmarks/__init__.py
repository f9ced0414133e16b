"""Measured comparisons (not tests); see BENCHMARKS.md."""
