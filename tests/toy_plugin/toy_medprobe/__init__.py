"""A toy medprobe plugin (tests/test_plugins.py): the benchmark toy_facts and the prober toy_order."""
