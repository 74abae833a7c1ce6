"""One results JSON per run, a printed table, and an optional bar chart.

The record holds what is needed to compare or reproduce a run: benchmark, dataset, config,
split, prober, model, seed, settings, metrics, per-group metrics, timings and library versions.
`medprobe publish results` turns the same record into Hub eval results.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from probers.api import UserError
from probers.atomic import Writer, write_all_atomically, write_text_atomically

LIBRARIES = ("medprobe", "torch", "transformers", "datasets", "evaluate", "huggingface-hub", "accelerate")


def library_versions() -> dict[str, str]:
    from probers.hub.cards import package_version  # cards imports datasets: only when a record is written

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
    versions: dict = field(default_factory=library_versions)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write the JSON atomically: a failed or killed write leaves the previous file as it was."""
        return write_text_atomically(path, self.to_json())


def load_record(path: str | Path) -> RunRecord:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return RunRecord(**data)
    except (json.JSONDecodeError, TypeError) as err:
        raise UserError(f"{path} is not a medprobe results file ({err})") from err


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
        raise UserError("--plot needs matplotlib: pip install 'medprobe[plot]'") from err
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
    """Write a run's results JSON, its plot (of `plot_record`, default the record) and `more` outputs
    ((target, writer) pairs, e.g. predictions) all or nothing, and print each path written."""
    writers = [
        (out, lambda temp: temp.write_text(record.to_json(), encoding="utf-8")),
        (plot, lambda temp: draw_per_group(plot_record or record, plot_metric, temp, plot_format(plot))),
        *more,
    ]
    written = write_all_atomically(writers)
    for path in written:
        print(f"wrote {path}")
    return written
