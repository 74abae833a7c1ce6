"""Benchmarks as tasks of other evaluation tools: lm-evaluation-harness (`medprobe export lm-eval`).

Imports (docs/architecture.md, layer probers and tasks): the foundation, the data layer and its own
layer; never the run, profile, compare, hub/ or cli/.
"""
