"""The Hugging Face Hub side: publishing datasets, metric Spaces and run results, and the checks before each.

Imports (docs/architecture.md, layer uses of runs): any layer but the commands; never cli/.
"""
