"""A record as the user reads it: its table per group (micro and macro lines), its intervals line by line, and
`--plot`'s bar chart per group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from medprobe.atomic import write_all_atomically
from medprobe.contracts import UserError
from medprobe.marks import figure_metadata
from medprobe.records.record import RunRecord


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
    """One line per overall metric with its 95% interval, its n and what was resampled; then the validity table of
    the facets (`format_validity`)."""
    if not record.intervals:
        return ""
    first = next(iter(record.intervals.values()))
    from medprobe.stats import plural

    lines = [
        f"95% intervals ({first['resamples']:,} bootstrap resamples of {first['n']:,} {plural(first['unit'])}; values in %):"
    ]
    plain = {metric: found for metric, found in record.intervals.items() if not found.get("facet")}
    width = max(map(len, plain), default=0)
    for metric, found in plain.items():
        chance = record.chance.get(metric, {}).get("value")
        extra = f"  chance {100 * chance:.2f}" if isinstance(chance, (int, float)) else ""
        strata = f"  (within {found['groups']} groups)" if found.get("groups") else ""
        seeds = f"  seed std {100 * found['seed_std']:.2f} over {found['seeds']} seeds" if found.get("seeds") else ""
        lines.append(f"  {metric:<{width}}  {interval_text(record, metric)}{extra}{strata}{seeds}")
    validity = format_validity(record)
    return "\n".join(lines) + (f"\n\n{validity}" if validity else "")


def scaled(value: float | None, scale: str) -> str:
    """A facet's number as it reads: a share in %, a count whole, a score (Brier) as it is."""
    if not isinstance(value, (int, float)):
        return "—"
    if scale == "count":
        return f"{value:,.0f}"
    return f"{value:.4f}" if scale == "score" else f"{100 * value:.2f}"


def span(entry: dict | None, scale: str) -> str:
    if not entry or entry.get("low") is None:
        return "—"
    return f"[{scaled(entry['low'], scale)}, {scaled(entry['high'], scale)}]"


def cutoff_of(metric: str) -> str | None:
    """The k of a metric named NAME@k ("acc@10" -> "10"), else None."""
    return metric.rpartition("@")[2] if "@" in metric else None


def validity_rows(metrics: dict, intervals: dict, headline: str) -> list[dict]:
    """The validity facets beside a headline metric, as profile.md, the model card and the leaderboard show them:
    first the headline itself with its clustered interval and design effect, then every facet metric at the
    headline's k (and those without a k: consistency_top1, AURC, ECE, Brier), in the record's order. Each row:
    facet, metric, value, scale, the item-level 95% interval (low, high, n) and the clustered one (clustered_low,
    clustered_high, clusters, design_effect; None where the record has none). [] for a run without facets."""
    k = cutoff_of(headline)
    rows = []
    for metric, found in intervals.items():
        at = cutoff_of(metric)
        if metric != headline and not (found.get("facet") and at in (None, k)):
            continue
        clustered = found.get("clustered") or {}
        rows.append(
            {
                "facet": found.get("facet") or "headline",
                "metric": metric,
                "value": metrics.get(metric),
                "scale": found.get("scale", ""),
                "low": found.get("low"),
                "high": found.get("high"),
                "n": found.get("n"),
                "clustered_low": clustered.get("low"),
                "clustered_high": clustered.get("high"),
                "clusters": clustered.get("clusters"),
                "design_effect": clustered.get("design_effect"),
            }
        )
    rows.sort(key=lambda row: row["facet"] != "headline")  # the headline first (a stable sort keeps the rest's order)
    return rows if len(rows) > 1 or any(row["clusters"] for row in rows) else []


def format_validity(record: RunRecord) -> str:
    """Is it knowledge? One row per facet metric (and per metric with a clustered interval): its value, 95% interval
    (item-level), clustered interval and design effect, n; shares in %, counts whole, Brier as it is."""
    rows = [
        (metric, found)
        for metric, found in record.intervals.items()
        if found.get("facet") or (found.get("clustered") or {}).get("by_group")  # facets, and the headline's clustering
    ]
    if not rows:
        return ""
    table = [("facet", "metric", "value", "95% interval", "clustered", "deff", "n")]
    for metric, found in rows:
        scale = found.get("scale", "")
        clustered = found.get("clustered") or {}
        effect = clustered.get("design_effect")
        table.append(
            (
                found.get("facet") or "headline",
                metric,
                scaled(record.metrics.get(metric), scale),
                span(found, scale),
                span(clustered, scale),
                f"{effect:.2f}" if isinstance(effect, (int, float)) else "—",
                f"{found['n']:,}",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    clusters = next((found["clustered"]["clusters"] for _, found in rows if found.get("clustered")), None)
    head = "validity facets (shares in %; 95% intervals item-level; clustered: resampling "
    head += f"{clusters:,} clusters, deff = design effect)" if clusters else "no clusters recorded)"
    lines = [head]
    for number, row in enumerate(table):
        cells = [cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(row)]
        lines.append("  " + "  ".join(cells))
        if number == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
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
    fig = per_group_figure(record, metric)
    try:  # an explicit format: without one, matplotlib appends .png to a path that has no suffix
        fig.savefig(
            path, dpi=120, format=fmt, bbox_inches="tight", metadata=figure_metadata(fmt)
        )  # "tight": the legend is beside the axes
    finally:
        plt.close(fig)


def per_group_figure(record: RunRecord, metric: str) -> Any:
    """One bar per group, sorted; the macro average as a dashed line, named in a legend outside the axes (inside,
    it covered the longest bars)."""
    plt = require_matplotlib()
    items = sorted(record.per_group.items(), key=lambda item: item[1][metric])
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(items) + 1.4))
    ax.barh([g for g, _ in items], [100 * v[metric] for _, v in items], color="#3b75af")
    ax.set_xlabel(f"{metric} (%)")
    config = f"/{record.config}" if record.config else ""
    ax.set_title(f"{record.prober} · {Path(str(record.model)).name} · {record.benchmark}{config}", fontsize=10)
    if f"macro_{metric}" in record.metrics:
        ax.axvline(100 * record.metrics[f"macro_{metric}"], color="#c44e52", linestyle="--", label="macro")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig
