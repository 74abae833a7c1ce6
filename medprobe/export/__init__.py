"""Benchmarks as tasks of other evaluation tools: lm-evaluation-harness (`medprobe export lm-eval`)."""
