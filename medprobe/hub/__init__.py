"""The Hugging Face Hub side: publishing datasets, metric Spaces and run results, and the checks before each."""
