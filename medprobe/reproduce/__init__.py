"""Reproduction recipes: each reproducible table of the benchmarks' papers as data, and the command
that runs it (`medprobe reproduce`).

A recipe (medprobe/reproduce/recipes/*.json) names the paper's models (Hub ids and revisions), and
its cells: one cell is one run of the one run loop (a prober, a task, a config, options, a model),
and holds the paper's figures that run measures, each with its source (paper, table, row, column)
and a tolerance. `medprobe reproduce RECIPE` runs the cells (resumably: a finished cell is not
rerun) and writes 'paper | measured ± interval | Δ | within tolerance?' as JSON, markdown and a figure.

- recipe.py: the schema, the loader and its checks against the registry;
- runner.py: cells -> run requests -> cell results under OUT/cells/;
- report.py: the comparison table and its three outputs.
"""
