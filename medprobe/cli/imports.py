"""`medprobe import lm-eval OUTPUT_DIR`: an lm-evaluation-harness run of medprobe's exported tasks, read back as
records (medprobe.interchange.lm_eval_import)."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
Read the folder lm_eval wrote (--output_path, with --log_samples) for tasks that `medprobe export lm-eval` wrote,
and write one medprobe results JSON with its per-item outcomes per exported benchmark config (MedLAMA: per config,
each relation a group, with the top-10 names per query for `medprobe review`; MST: one over the tasks run). Each
item is identified by its medprobe id and content digest, recomputed from the doc lm-eval logged and checked
against the export's, so the record pairs with medprobe's own runs in `compare`; every outcome is recomputed from
the logged log-likelihoods and every number lm-eval reported is checked against it. The record says it was scored
by lm-eval (prober "lm-eval"), names the model, backend and arguments lm-eval recorded, lm-eval's version and the
task versions, and the lm_eval command that repeats it; compare, leaderboard, review and publish read it like any
run.

Refused, in one line (exit 2): no results or no samples (run lm_eval with --log_samples); a run of no task medprobe
exported; logs of other data than the export's (a content digest that differs); a partial run (--limit, or some of
a record's tasks) unless --allow-subset."""


def add_import_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("import", help="read another evaluation tool's run back as medprobe records (lm-eval)")
    tools = parser.add_subparsers(title="tools", metavar="TOOL", required=True)
    lm_eval = tools.add_parser(
        "lm-eval",
        help="an lm-evaluation-harness run (--log_samples) of medprobe's exported tasks, as records with outcomes",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lm_eval.add_argument(
        "output", metavar="OUTPUT_DIR", help="lm_eval's --output_path (or its model folder, or one results_<time>.json)"
    )
    lm_eval.add_argument(
        "--out",
        metavar="DIR",
        help="folder for the records, medprobe_<benchmark>_<config>_<time>.json (default: beside lm-eval's results JSON)",
    )
    lm_eval.add_argument(
        "--allow-subset",
        action="store_true",
        help="import a partial run (lm_eval --limit, or some of a record's tasks), recorded as a subset with what it "
        "probed of what: publish and the leaderboard keep it apart from the benchmark's runs",
    )
    lm_eval.add_argument("--overwrite", action="store_true", help="replace files at the output paths that medprobe did not write")
    lm_eval.set_defaults(func=run_import_lm_eval)


def run_import_lm_eval(args: argparse.Namespace) -> int:
    from medprobe.interchange.lm_eval_import import import_lm_eval, summary

    for path in import_lm_eval(args.output, args.out, allow_subset=args.allow_subset, overwrite=args.overwrite):
        print(summary(path))
    return 0
