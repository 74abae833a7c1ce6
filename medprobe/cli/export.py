"""`medprobe export lm-eval BENCHMARK --dataset D --out DIR`: task YAMLs for lm-evaluation-harness."""

from __future__ import annotations

import argparse

DESCRIPTION = """\
Write lm-evaluation-harness (0.4.x) tasks for a benchmark into DIR, then run them with
  lm_eval --model hf --model_args pretrained=<causal LM> --include_path DIR --tasks medprobe_mst
(lm-eval is not a dependency of medprobe: pip install "medprobe[lm-eval]").

mst: one multiple_choice task per config (medprobe_mst_<config>) and the group medprobe_mst (mean
over tasks). The context is the text before [MASK]; each choice is the rest of the sentence with
the choice in the slot, scored by total log-likelihood (acc; medprobe's causal-lm prober with
--length-normalization none ranks the same way). The default build: 5,000 test rows, 12,000
requests.

medlama: per config (full, hard) and relation, the query's log-likelihood with every candidate
of its relation (medprobe_medlama_<config>_<relation>), acc_at_1 and acc_at_10 counting every gold
name; groups medprobe_medlama_<config> (macro over relations, the paper's figure) and
medprobe_medlama_<config>_micro (over queries). Costly: the release's hard set is 4.7 M
log-likelihood requests, full 9.2 M (the export prints the count); use --limit N in lm_eval
for a first look.

Encoders and masked LMs (BERT, PubMedBERT, MiniLM) cannot run in lm-eval (MiniLM crashes there):
probe them with `medprobe probe`."""


def add_export_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("export", help="export a benchmark as tasks for another evaluation tool (lm-eval)")
    tools = parser.add_subparsers(title="tools", metavar="TOOL", required=True)
    lm_eval = tools.add_parser(
        "lm-eval",
        help="task YAMLs for lm-evaluation-harness (causal LMs only)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lm_eval.add_argument("benchmark", choices=["mst", "medlama"], help="which benchmark")
    lm_eval.add_argument(
        "--dataset",
        required=True,
        help="a Hub id (<org>/mst) or a folder written by `medprobe build` (named in the YAMLs by its absolute path)",
    )
    lm_eval.add_argument(
        "--out", required=True, help="folder for the YAMLs and utils.py (new, empty, or a previous export: replaced whole)"
    )
    lm_eval.add_argument("--split", default="test", help="the split lm-eval evaluates (default: test)")
    lm_eval.set_defaults(func=run_export_lm_eval)


def run_export_lm_eval(args: argparse.Namespace) -> int:
    from medprobe.export.lm_eval import export_lm_eval

    report = export_lm_eval(args.benchmark, args.dataset, args.out, split=args.split)
    for note in report.notes:
        print(f"medprobe: {note}")
    requests = ", ".join(f"{config} {count:,}" for config, count in report.requests.items())
    print(f"wrote {len(report.tasks)} task(s) and the group(s) {', '.join(report.groups)} to {report.out}")
    print(f"log-likelihood requests of a full run: {requests}")
    print(f"run: lm_eval --model hf --model_args pretrained=<causal LM> --include_path {report.out} --tasks {report.groups[0]}")
    return 0
