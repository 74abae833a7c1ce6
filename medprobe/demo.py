"""What `medprobe demo` (medprobe/cli/demo.py, its steps) makes of its runs: the shipped data it probes, the time a
run on the real MedLAMA takes, its tables, and its output folder, one demo at a time.

    with demo_folder(Path("out/demo"), overwrite=False) as folder:   # checked, locked, staged beside OUT
        ...                                                          # every step writes under folder.staged
        settle(folder, "out/demo", log)                              # paths as in OUT, demo.log, demo.json
    # leaving the block: the staged folder becomes OUT in one swap; a failed or interrupted demo leaves OUT as it was

One demo folder is one demo: it is written through the one staged writer (medprobe.atomic_folder.staged_folder), so a
second demo interrupted half-way never leaves its untuned runs beside the rewired runs of the first. `demo.json`
records every file the demo wrote with its sha256: a later demo replaces such a folder (and says so), and refuses
one holding anything else unless --overwrite.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from medprobe.atomic_folder import StagedFolder, staged_folder
from medprobe.records.record import RunRecord
from medprobe.records.tables import percent

DEMO_DATA = Path(__file__).resolve().parent / "demo_data"
SAMPLE_DATASET = DEMO_DATA / "medlama_sample"
SAMPLE_CORPUS = DEMO_DATA / "rewiring_sentences.txt"
RELEASE_CORPUS = "pubmed_sents_no_punkt_10k_0"  # the first of the MedLAMA release's ten rewiring corpora
RECORD = "demo.json"  # in --out: every file the demo wrote, with its sha256 (what a later demo may replace)
LOG = "demo.log"  # in --out: what the libraries printed


# --- how long a run on the real MedLAMA takes ---------------------------------------------------------------

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


def time_estimate(args) -> str:
    """One line before a run on the real MedLAMA: what it encodes and about how long that takes here (`args`: the
    demo's options config, per_relation, rewire_steps, rewire_batch_size).

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


# --- the tables ------------------------------------------------------------------------------------------

# Said under every per-relation table: what the numbers are, and why the two rankings differ.
COLUMNS_SENTENCE = (
    'acc@k = % of queries with a right answer among the model\'s k nearest names; "as in the paper" ranks all names, '
    'and the nearest is nearly always the query\'s own subject, so its acc@1 is ~0; "head left out" drops that name '
    "(--exclude-head)."
)
HEADLESS_SUFFIX = "-exclude-head"  # the results file of the --exclude-head run beside each run's own
SUMMARY_COLUMNS = ["acc@1", "acc@10", "macro_acc@1", "macro_acc@10"]


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


def summary_table(runs: dict[str, tuple[RunRecord, RunRecord]]) -> str:
    """Every run (label -> its record as in the paper, and with the head left out), one line per ranking, then what
    the columns are."""
    width = max([len("run"), *map(len, runs)])
    header = (
        f"{'run':<{width}}  {'ranking':<15}  "
        + "  ".join(f"{c:>12}" for c in SUMMARY_COLUMNS)
        + f"  {'acc@10 95%':>10}  {'probe s':>8}"
    )
    lines = [header, "-" * len(header)]
    for label, pair in runs.items():
        for ranking, record in zip(("as in the paper", "head left out"), pair):
            values = "  ".join(f"{percent(record.metrics[c]):>12}" for c in SUMMARY_COLUMNS)
            seconds = record.timings.get("probe", 0.0) + record.timings.get("rewire", 0.0)
            lines.append(f"{label:<{width}}  {ranking:<15}  {values}  {interval_cell(record, 'acc@10'):>10}  {seconds:8.1f}")
    first = next(iter(runs.values()))[0]
    note = (
        "acc in %, micro over queries and macro over relations; acc@10 95% = bootstrap interval over queries. "
        "probe s includes the rewiring: the rewired run trains first, its head-left-out rerun loads the saved "
        f"model and only ranks, hence seconds. {chance_sentence(first)}"
    )
    return "\n".join(lines) + "\n" + note


# --- the folder ------------------------------------------------------------------------------------------


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


def earlier_demo(out: Path) -> bool:
    """Refuse (one line, naming them) files in OUT that no earlier demo recorded writing; True when OUT holds an
    earlier demo, which this one replaces."""
    from medprobe.atomic import refuse_unrecorded

    refuse_unrecorded(out, recorded_files(out), command="demo")
    return out.is_dir() and any(out.iterdir())


@contextmanager
def demo_folder(out: Path, *, overwrite: bool = False, print_fn: Callable[[str], None] = print) -> Iterator[StagedFolder]:
    """OUT locked, checked (`earlier_demo`, skipped under `overwrite`) and staged beside itself; the block writes the
    demo into `folder.staged`, which replaces OUT whole when the block ends (medprobe.atomic_folder.staged_folder).
    Says, before any step, when an earlier demo or (with `overwrite`) other files are to be replaced."""
    with staged_folder(out, "demo", refuse=earlier_demo, overwrite=overwrite, notes=print_fn) as folder:
        if folder.owned:
            print_fn(f"{out} holds an earlier demo; this one replaces it when it finishes (give another --out to keep it)")
        elif overwrite and out.is_dir() and any(out.iterdir()):
            print_fn(f"--overwrite: {out} and everything in it are replaced when this demo finishes")
        yield folder


def settle(folder: StagedFolder, shown: str | Path, log: Path | None) -> None:
    """The staged demo made ready to become OUT: its results JSONs naming the paths as they will be in OUT (`shown`,
    as the user gave it) rather than the staging folder's, the log moved in, then demo.json recording every file."""
    from medprobe.profiling.folder import relocate
    from medprobe.records.owned import read_record

    staged = folder.staged
    for path in sorted(staged.rglob("*.json")):
        record = read_record(path)
        if record is not None and relocate(record, str(staged), str(shown)) != record:
            relocate(record, str(staged), str(shown)).save(path)
    if log is not None and log.is_file():
        shutil.move(log, staged / LOG)
    record_files(staged)
