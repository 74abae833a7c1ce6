"""One results JSON per run (+ its per-item outcomes beside it), a printed table, and an optional bar chart.

The record holds what is needed to report, compare or repeat a run: benchmark, dataset, config,
split, prober, model, seed, settings, metrics, per-group metrics, timings and library versions;
every overall metric's 95% interval with its n (`intervals`) and chance level (`chance`); the
data's content fingerprint, the subset probed, the model's identity, medprobe's version and
commit, the citation keys and the `medprobe probe` command that repeats the run. The per-item
outcomes (`outcomes`: e.g. the rank of each query's best gold answer) are a JSON-lines file
beside the JSON, named and hashed in it, from which `medprobe compare` pairs two runs.
`medprobe publish results` turns the same record into Hub eval results.

Imports (docs/architecture.md, layer data): the foundation and building/cards (medprobe's version, when a
record is written); never tasks, probers, the run, hub/, export/ or cli/.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from medprobe.api import UserError
from medprobe.atomic import Writer, write_all_atomically, write_text_atomically
from medprobe.digests import sha256_file

if TYPE_CHECKING:  # numpy only when outcomes are read or written
    from medprobe.stats import Outcomes

LIBRARIES = ("medprobe", "torch", "transformers", "datasets", "evaluate", "huggingface-hub", "accelerate")


def library_versions() -> dict[str, str]:
    from medprobe.building.cards import package_version  # cards imports datasets: only when a record is written

    return {"python": platform.python_version(), **{name: package_version(name) for name in LIBRARIES}}


@dataclass
class RunRecord:
    benchmark: str
    dataset: str
    config: str | None
    split: str
    prober: str
    model: str | None
    seed: int | None
    settings: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)  # overall numbers, e.g. {"acc@1": ..., "macro_acc@1": ...}
    per_group: dict = field(default_factory=dict)  # {group: {metric: value, ...}}
    timings: dict = field(default_factory=dict)  # seconds per phase
    counts: dict = field(default_factory=dict)  # e.g. queries and candidates scored
    intervals: dict = field(default_factory=dict)  # {metric: {"low", "high", "level", "n", "method", ...}} (medprobe.stats)
    chance: dict = field(default_factory=dict)  # {metric: {"value", "method"}}: the metric under random answers
    outcomes: dict | None = None  # {"file", "sha256", "items", "unit", "fields"}: the per-item outcomes beside the JSON
    files: dict = field(default_factory=dict)  # {path relative to the JSON's folder: sha256} of every file written with it
    data_fingerprint: dict = field(default_factory=dict)  # sha256 of the data files probed (medprobe.provenance)
    subset: dict = field(default_factory=dict)  # {"subset": bool, "options", "items", "item_ids_sha256"}
    model_identity: dict = field(default_factory=dict)  # path or Hub id, revision, weights sha256
    source: dict = field(default_factory=dict)  # medprobe's version, and its git commit from a checkout
    command: str = ""  # the `medprobe probe ...` command that repeats the run
    citations: list = field(default_factory=list)  # BibTeX keys of what the run used (`medprobe cite`)
    task: str | None = None  # the registry task that ran (None in files written before it was recorded)
    versions: dict = field(default_factory=library_versions)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write the JSON atomically: a failed or killed write leaves the previous file as it was."""
        return write_text_atomically(path, self.to_json())


# --- per-item outcomes beside the JSON ------------------------------------------------------------------


def outcomes_path(out: str | Path) -> Path:
    """Where the outcomes of the results JSON `out` go: results.json -> results.outcomes.jsonl."""
    out = Path(out)
    return out.with_name(f"{out.stem}.outcomes.jsonl")


def plain(value: float) -> int | float | None:
    """A JSON value of an outcome: NaN (no value) as null, whole numbers as ints."""
    value = float(value)
    if math.isnan(value):
        return None
    return int(value) if value.is_integer() else value


def outcomes_jsonl(outcomes: Outcomes) -> str:
    """One JSON line per item: its id, its group, its content digest (`item`, when recorded) and each outcome
    column (a list for a 2-D column)."""
    lines = []
    for row, (item, group) in enumerate(zip(outcomes.ids, outcomes.groups)):
        line: dict = {"id": item, "group": group}
        if outcomes.contents:
            line["item"] = outcomes.contents[row]
        for name, column in outcomes.columns.items():
            value = column[row]
            line[name] = [plain(v) for v in value] if column.ndim > 1 else plain(value)
        lines.append(json.dumps(line, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def outcomes_entry(text: str, out: str | Path, outcomes: Outcomes, unit: str, fields: dict[str, str]) -> dict:
    """The record's `outcomes` entry for the JSON-lines `text` written beside `out`."""
    return {
        "file": outcomes_path(out).name,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "items": len(outcomes),
        "unit": unit,
        "fields": fields,
    }


# --- intervals in tables ----------------------------------------------------------------------------------


def interval_text(record: RunRecord, metric: str, scale: float = 100.0, digits: int = 2) -> str:
    """`12.34 [11.02, 13.70]` (in %, by default), or the bare value when the record has no interval for it."""
    value = record.metrics.get(metric)
    if not isinstance(value, (int, float)) or value is None:
        return "—"
    found = record.intervals.get(metric)
    text = f"{scale * value:.{digits}f}"
    if found and found.get("low") is not None:
        text += f" [{scale * found['low']:.{digits}f}, {scale * found['high']:.{digits}f}]"
    return text


def format_intervals(record: RunRecord) -> str:
    """One line per overall metric with its 95% interval, its n and what was resampled."""
    if not record.intervals:
        return ""
    first = next(iter(record.intervals.values()))
    from medprobe.stats import plural

    lines = [
        f"95% intervals ({first['resamples']:,} bootstrap resamples of {first['n']:,} {plural(first['unit'])}; values in %):"
    ]
    width = max(map(len, record.intervals))
    for metric, found in record.intervals.items():
        chance = record.chance.get(metric, {}).get("value")
        extra = f"  chance {100 * chance:.2f}" if isinstance(chance, (int, float)) else ""
        strata = f"  (within {found['groups']} groups)" if found.get("groups") else ""
        seeds = f"  seed std {100 * found['seed_std']:.2f} over {found['seeds']} seeds" if found.get("seeds") else ""
        lines.append(f"  {metric:<{width}}  {interval_text(record, metric)}{extra}{strata}{seeds}")
    return "\n".join(lines)


def percent(value: float) -> str:
    return f"{100 * value:6.2f}"


def format_table(record: RunRecord, columns: list[str], group_label: str = "group") -> str:
    """Per-group rows, then the micro (all queries) and macro (mean over groups) lines, in %."""
    width = max([len(group_label), len("micro (all)"), *(len(g) for g in record.per_group)])
    header = f"{group_label:<{width}}  " + "  ".join(f"{c:>8}" for c in columns)
    lines = [header, "-" * len(header)]
    for group, values in record.per_group.items():
        lines.append(f"{group:<{width}}  " + "  ".join(f"{percent(values[c]):>8}" for c in columns))
    lines.append("-" * len(header))
    lines.append(f"{'micro (all)':<{width}}  " + "  ".join(f"{percent(record.metrics[c]):>8}" for c in columns))
    macro = [f"macro_{c}" for c in columns]
    if all(m in record.metrics for m in macro):
        lines.append(f"{'macro':<{width}}  " + "  ".join(f"{percent(record.metrics[m]):>8}" for m in macro))
    return "\n".join(lines)


def require_matplotlib():
    """matplotlib.pyplot on the file-only Agg backend, or the error that says how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise UserError("--plot needs matplotlib: pip install matplotlib") from err
    return plt


def plot_format(path: str | Path) -> str:
    """The image format of a --plot path (png without a suffix), checked against what matplotlib writes."""
    require_matplotlib()
    from matplotlib.backend_bases import FigureCanvasBase

    fmt = Path(path).suffix[1:].lower() or "png"
    supported = FigureCanvasBase.get_supported_filetypes()
    if fmt not in supported:
        raise UserError(f"--plot {path}: matplotlib cannot write .{fmt} images; use one of {', '.join(sorted(supported))}")
    return fmt


def plot_per_group(record: RunRecord, metric: str, path: str | Path) -> Path:
    """A horizontal bar chart of `metric` per group (e.g. acc@10 per relation), best on top, written atomically."""
    write_all_atomically([(path, lambda temp: draw_per_group(record, metric, temp, plot_format(path)))])
    return Path(path)


def draw_per_group(record: RunRecord, metric: str, path: Path, fmt: str) -> None:
    """The chart of `plot_per_group`, saved straight to `path` as a `fmt` image (see `plot_format`)."""
    plt = require_matplotlib()
    items = sorted(record.per_group.items(), key=lambda item: item[1][metric])
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(items) + 1.4))
    ax.barh([g for g, _ in items], [100 * v[metric] for _, v in items], color="#3b75af")
    ax.set_xlabel(f"{metric} (%)")
    ax.set_title(f"{record.prober} · {Path(str(record.model)).name} · {record.benchmark}/{record.config}", fontsize=10)
    if f"macro_{metric}" in record.metrics:
        ax.axvline(100 * record.metrics[f"macro_{metric}"], color="#c44e52", linestyle="--", label="macro")
        ax.legend(loc="lower right")
    fig.tight_layout()
    try:  # an explicit format: without one, matplotlib appends .png to a path that has no suffix
        fig.savefig(path, dpi=120, format=fmt)
    finally:
        plt.close(fig)


def save_run(
    record: RunRecord,
    out: str | Path,
    *,
    plot: str | Path | None = None,
    plot_metric: str = "",
    plot_record: RunRecord | None = None,
    more: Iterable[tuple[str | Path | None, Writer]] = (),
) -> list[Path]:
    """Write a run's files as one unit and print each path written: the `more` outputs (outcomes,
    predictions) and the plot (of `plot_record`, default the record) first, the results JSON last,
    naming the sha256 of each of the others in `files` (medprobe.atomic.write_all_atomically), so that
    a reader can tell a JSON from a write that a SIGKILL cut between two renames."""
    out = Path(out)
    written: dict[Path, Path] = {}  # target -> its temporary file, filled as each is written

    def keeping(target: str | Path, write: Writer) -> Writer:
        def write_and_keep(temp: Path) -> None:
            write(temp)
            written[Path(target)] = temp

        return write_and_keep

    def write_json(temp: Path) -> None:
        record.files = {path_from(out, target): sha256_file(temp) for target, temp in written.items()}
        temp.write_text(record.to_json(), encoding="utf-8")

    companions = [
        *more,
        (plot, lambda temp: draw_per_group(plot_record or record, plot_metric, temp, plot_format(plot))),
    ]
    paths = write_all_atomically([*((t, keeping(t, w)) for t, w in companions if t), (out, write_json)])
    for path in [paths[-1], *paths[:-1]]:  # the results JSON first, as the user asked for it
        print(f"wrote {path}")
    return paths


def path_from(out: Path, target: str | Path) -> str:
    """`target` as the results JSON `out` names it: relative to the JSON's folder (the files travel together),
    absolute where no relative path leads there (another drive)."""
    target = Path(target).expanduser().resolve()
    try:
        return Path(os.path.relpath(target, out.expanduser().resolve().parent)).as_posix()
    except ValueError:
        return str(target)
