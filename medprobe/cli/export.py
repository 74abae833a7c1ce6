"""`medprobe export lm-eval BENCHMARK --dataset D --out DIR`: task YAMLs for lm-evaluation-harness;
`medprobe export eee RUN... --out DIR`: runs as Every Eval Ever records (medprobe/eee/)."""

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

    parser = subparsers.add_parser(
        "export", help="export a benchmark as tasks for another evaluation tool (lm-eval), or runs as Every Eval Ever records"
    )
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
    add_eee(tools)


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


EEE_DESCRIPTION = """\
Write runs as Every Eval Ever records (schema 0.3.0): per run, DIR/data/<benchmark>/<developer>/<model>/<uuid>.json
(the aggregate: one result per overall metric, with its 95% interval, n and bootstrap in score_details.uncertainty,
its chance level, range and direction in metric_config) and <uuid>_samples.jsonl (the instance-level records: one per
item and metric that is a mean of its items' scores, with the item's id, group, content digest and outcomes). Built with
the every-eval-ever package's models and checked by its validator before DIR is replaced; DIR/eee-files.json records
what was written. No question or answer text leaves; --predictions adds a MedLAMA run's own top-k names (UMLS names:
only with --gated). every-eval-ever is an extra: pip install 'medprobe[eee]' (docs/eee.md)."""


def add_eee(tools: argparse._SubParsersAction) -> None:
    eee = tools.add_parser(
        "eee",
        help="runs as Every Eval Ever aggregate and instance-level records",
        description=EEE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    eee.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a results JSON of medprobe probe, a profile folder (each of its runs), or a published run hub:ORG/NAME/...",
    )
    eee.add_argument("--out", required=True, help="folder for the records (new, empty, or a previous export: replaced whole)")
    eee.add_argument(
        "--model-id", metavar="ORG/NAME", help="the model's Hub id, for runs of a model read from a folder (default: the run's)"
    )
    eee.add_argument(
        "--source-organization-name",
        default="unknown",
        metavar="NAME",
        help="source_metadata.source_organization_name: who provides these records (default: unknown)",
    )
    eee.add_argument("--source-organization-url", metavar="URL", help="source_metadata.source_organization_url")
    eee.add_argument(
        "--evaluator-relationship",
        default="third_party",
        choices=["first_party", "third_party", "collaborative", "other"],
        help="the evaluator's relationship to the model's developer (default: third_party)",
    )
    eee.add_argument(
        "--predictions",
        action="store_true",
        help="put each MedLAMA run's own top-k names (its predictions file) in output.raw: UMLS names, so only with --gated",
    )
    eee.add_argument("--gated", action="store_true", help="--predictions: the folder goes only into a gated repo")
    eee.add_argument("--private", action="store_true", help="--predictions: the folder goes only into a private repo")
    eee.add_argument(
        "--overwrite", action="store_true", help="replace DIR even if it holds files the export did not write, or edited ones"
    )
    eee.set_defaults(func=run_export_eee)


def run_export_eee(args: argparse.Namespace) -> int:
    from medprobe.eee.folder import export_eee
    from medprobe.eee.records import Options

    options = Options(args.source_organization_name, args.evaluator_relationship, args.source_organization_url)
    report = export_eee(
        args.runs,
        args.out,
        model_id=args.model_id,
        options=options,
        predictions=args.predictions,
        gated=args.gated,
        private=args.private,
        overwrite=args.overwrite,
    )
    for exported in report.exported:
        log = exported.aggregate
        rows = (
            f"; {exported.samples_path.rsplit('/', 1)[1]}: {len(exported.instances):,} instance records"
            if exported.instances
            else ""
        )
        print(f"{log.evaluation_id}: {exported.aggregate_path} ({len(log.evaluation_results)} results{rows})")
    for note in report.notes:
        print(f"medprobe: {note}")
    print(f"wrote {len(report.exported)} run(s) to {report.out} (Every Eval Ever schema, every-eval-ever {report.version})")
    return 0
