"""`medprobe export lm-eval BENCHMARK --dataset D --out DIR`: task YAMLs for lm-evaluation-harness."""

from __future__ import annotations

import argparse
import ast
import importlib.util
from pathlib import Path

DESCRIPTION = """\
Write lm-evaluation-harness (0.4.x) tasks for a benchmark into DIR, then run them with
  lm_eval --model hf --model_args pretrained=<causal LM> --include_path DIR --tasks <group>
(lm-eval is not a dependency of medprobe: pip install "medprobe[lm-eval]"). The benchmarks
whose registry entry has an lm-eval export:"""
ENCODERS = """\
Encoders and masked LMs (BERT, PubMedBERT, MiniLM) cannot run in lm-eval (MiniLM crashes there):
probe them with `medprobe probe`."""


def hook_help(target: str) -> str:
    """The first paragraph of the docstring of an export hook's module, read without importing it
    (`--help` stays light whatever the hook imports)."""
    module = target.partition(":")[0]
    try:
        spec = importlib.util.find_spec(module)
        source = Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""
        docstring = ast.get_docstring(ast.parse(source)) or ""
    except (ImportError, OSError, SyntaxError, ValueError):
        docstring = ""
    return docstring.split("\n\n")[0] or f"(see {module})"


def description() -> str:
    from medprobe.export.lm_eval import exporters

    return "\n\n".join([DESCRIPTION, *(hook_help(target) for target in exporters().values()), ENCODERS])


def add_export_command(subparsers: argparse._SubParsersAction) -> None:
    from medprobe.export.lm_eval import exporters

    parser = subparsers.add_parser("export", help="export a benchmark as tasks for another evaluation tool (lm-eval)")
    tools = parser.add_subparsers(title="tools", metavar="TOOL", required=True)
    lm_eval = tools.add_parser(
        "lm-eval",
        help="task YAMLs for lm-evaluation-harness (causal LMs only)",
        description=description(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lm_eval.add_argument("benchmark", choices=list(exporters()), help="which benchmark")
    lm_eval.add_argument(
        "--dataset",
        required=True,
        help="a Hub id (<org>/<name>) or a folder written by `medprobe build` (named in the YAMLs by its absolute path)",
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
