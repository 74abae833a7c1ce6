"""The Profile (what profile.json holds) and what is made of it: profile.md's table, profile.png's bars against
chance and floor, the printed summary; and the check that a profile's headline rows and table are its runs'.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from medprobe.atomic import write_all_atomically
from medprobe.contracts import UserError
from medprobe.marks import figure_metadata
from medprobe.profiling.plan import (
    KIND_NAMES,
    DataSource,
)
from medprobe.records.tables import validity_rows


@dataclass
class Profile:
    model: str
    kind: str
    kind_reason: str
    settings: dict
    data: dict[str, dict] = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)  # label, request, command, results, predictions, record
    headline: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    figure: str | None = None
    figure_note: str = ""
    seconds: float = 0.0
    versions: dict = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    # sha256 of every file of the folder but profile.json and the runs' own (each run entry's `files`):
    # what makes the folder a medprobe profile a new one may replace, and what `publish results` checks
    files: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.2f}"


def model_label(model: str) -> str:
    """A local model folder by its name only (profile.md may go into a public card), else the Hub id or packaged name."""
    return Path(model).name if Path(model).expanduser().exists() else model


def markdown(profile: Profile) -> str:
    """profile.md: the knowledge-profile table (one row per benchmark run, then the skipped ones) and notes."""
    subset = "the --quick subset" if profile.settings.get("quick") else "full benchmarks"
    lines = [
        f"# Knowledge profile: {model_label(profile.model)}",
        "",
        f"{KIND_NAMES[profile.kind]} ({profile.kind_reason}); medprobe profile, {subset}, {profile.created}.",
        "Values, 95% intervals, chance and floor in %; n = the items the interval resampled.",
        "",
        "| benchmark | config | prober | metric | value | 95% interval | n | chance | floor |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    notes: list[str] = []
    for row in profile.headline:
        value = percent(row["value"]) if row["value"] is not None else row.get("note", "—")
        interval = f"{percent(row['low'])}–{percent(row['high'])}" if row.get("low") is not None else "—"
        lines.append(
            f"| {row['benchmark']} | {row['config'] or 'all'} | {row['prober']} | {row['metric']} | {value} "
            f"| {interval} | {row.get('n') or '—'} | {percent(row['chance'])} | {percent(row['floor'])} |"
        )
        for what in ("chance", "floor"):
            if row[what] is not None:
                notes.append(f"{row['benchmark']}/{row['config'] or 'all'} {row['prober']}: {what} = {row[f'{what}_source']}")
    for item in profile.skipped:
        lines.append(
            f"| {item['benchmark']} | {item['config'] or '—'} | {item['prober'] or '—'} | — | skipped: {item['reason']} | | |"
        )
    lines += validity_section(profile.headline)
    lines += ["", "Data:", ""]
    lines += [f"- {DataSource(**source).describe(path=False)}" for source in profile.data.values()]
    if notes:
        lines += ["", "Chance and floor:", ""] + [f"- {note}" for note in notes]
    if profile.failed:
        lines += ["", "Failed runs:", ""] + [f"- {item['label']}: {item['error']}" for item in profile.failed]
    return "\n".join(lines) + "\n"


VALIDITY_NOTE = (
    "Is it knowledge? (docs: Is it knowledge?) Each run's facets at its headline k: shares in %, counts whole, "
    "scores (ECE, Brier, AURC) as they are. The headline's 95% interval above is the item-level one (queries "
    "resampled); the clustered interval resamples subjects (every query of a drawn subject together), deff = its "
    "design effect (variance under clustering / under independence)."
)


def validity_section(headline: list[dict]) -> list[str]:
    """profile.md's validity section: per run with facets, one row per facet metric (medprobe.records.tables.
    validity_rows), its value, item-level and clustered 95% intervals, design effect and n; [] when no run has any."""
    from medprobe.records.tables import scaled, span

    runs = [row for row in headline if row.get("validity")]
    if not runs:
        return []
    lines = ["", "## Validity", "", VALIDITY_NOTE, ""]
    lines += ["| run | facet | metric | value | 95% interval | clustered | deff | n |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for row in runs:
        for facet in row["validity"]:
            scale, effect = facet["scale"], facet["design_effect"]
            clustered = {"low": facet["clustered_low"], "high": facet["clustered_high"]}
            lines.append(
                f"| {row['run']} | {facet['facet']} | {facet['metric']} | {scaled(facet['value'], scale)} "
                f"| {span(facet, scale)} | {span(clustered, scale)} "
                f"| {f'{effect:.2f}' if isinstance(effect, (int, float)) else '—'} | {facet['n'] or '—'} |"
            )
    return lines


def draw_figure(profile: Profile, path: Path) -> None:
    """profile.png: one bar per headline row, with its chance (black) and floor (red) marked."""
    from medprobe.records.tables import require_matplotlib

    plt = require_matplotlib()
    fig = profile_figure(profile)
    try:  # "tight": the legend sits outside the axes, beside them
        fig.savefig(path, dpi=120, format="png", bbox_inches="tight", metadata=figure_metadata("png"))
    finally:
        plt.close(fig)


VALUE_LABEL_GAP_PT = 9  # from the centre of the rightmost mark: a marker's radius (sqrt(140) / 2 = 5.9 pt) and air


def profile_figure(profile: Profile) -> Any:
    """The figure of profile.png. Each value label stands right of everything on its row (the bar, the interval,
    the chance and floor marks), and the legend outside the axes, so no label covers a mark or another label."""
    from medprobe.records.tables import require_matplotlib

    plt = require_matplotlib()
    rows = [row for row in profile.headline if row["value"] is not None]
    samples = sample_notes(profile)
    labels = [
        f"{row['benchmark']}/{row['config'] or 'all'}{' (sample*)' if row['benchmark'] in samples else ''}\n"
        f"{row['prober']} · {row['metric']}"
        for row in rows
    ]
    fig, ax = plt.subplots(figsize=(8, 0.6 * max(len(rows), 1) + 1.6))
    positions = list(range(len(rows)))[::-1]
    errors = [
        [100 * (row["value"] - row["low"]) if row.get("low") is not None else 0 for row in rows],
        [100 * (row["high"] - row["value"]) if row.get("high") is not None else 0 for row in rows],
    ]
    ax.barh(
        positions,
        [100 * row["value"] for row in rows],
        color="#3b75af",
        label="model (95% interval)",
        xerr=errors,
        error_kw={"ecolor": "#333333", "capsize": 3, "elinewidth": 1},
    )
    for what, color, marker in (("chance", "black", "|"), ("floor", "#c44e52", "D")):
        marked = [(y, 100 * row[what]) for y, row in zip(positions, rows) if row[what] is not None]
        if marked:
            ax.scatter([x for _, x in marked], [y for y, _ in marked], color=color, marker=marker, s=140, zorder=3, label=what)
    for y, row in zip(positions, rows):
        marks = [row["value"], row.get("high"), row["chance"], row["floor"]]
        right = 100 * max(mark for mark in marks if mark is not None)
        ax.annotate(
            f"{100 * row['value']:.1f}",
            (right, y),
            xytext=(VALUE_LABEL_GAP_PT, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    ax.set_yticks(positions, labels, fontsize=8)
    ax.set_xlabel("headline metric (%)")
    ax.set_xlim(0, 110)  # room right of 100 for a value label
    ax.set_xticks(range(0, 101, 20))
    ax.set_title(f"knowledge profile · {model_label(profile.model)} ({profile.kind})", fontsize=10)
    if rows:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    if samples:  # as profile.md says it: below the axes, inside what savefig's "tight" box keeps
        note = "\n".join(textwrap.fill(f"* {text}", 120) for text in samples.values())
        fig.text(0.01, 0.0, note, fontsize=7, va="top", ha="left")
    return fig


def sample_notes(profile: Profile) -> dict[str, str]:
    """Benchmark -> what its data is, for each benchmark probed on a sample that is not the benchmark (the shipped
    MedLAMA-format sample: "this is NOT MedLAMA ..."), as profile.md and the summary say it."""
    return {name: DataSource(**source).describe(path=False) for name, source in profile.data.items() if source.get("sample")}


def write_profile(profile: Profile, out: Path, into: Path | None = None) -> list[Path]:
    """profile.json, profile.md and (with matplotlib) profile.png of the profile folder OUT, all or nothing,
    written into `into` (default OUT; `run_profile` writes its staging folder); profile.json records the
    sha256 of the other two in `files`."""
    from medprobe.digests import sha256_file

    into = into or out
    if not profile.figure_note:
        profile.figure = str(out / "profile.png")

    def write_table(temp: Path) -> None:
        temp.write_text(markdown(profile), encoding="utf-8")
        profile.files["profile.md"] = sha256_file(temp)

    def draw(temp: Path) -> None:
        draw_figure(profile, temp)
        profile.files["profile.png"] = sha256_file(temp)

    writers = [  # profile.json last: it records the others' sha256
        (into / "profile.md", write_table),
        (None if profile.figure_note else into / "profile.png", draw),
        (into / "profile.json", lambda temp: temp.write_text(profile.to_json(), encoding="utf-8")),
    ]
    return write_all_atomically(writers)


def read_verified_profile(folder: Path) -> tuple[dict, dict[str, Any]]:
    """(profile.json, label -> each run's medprobe.records.LoadedRun) of a folder written by `medprobe profile`: its
    files are the ones profile.json recorded (by sha256), each run proves its numbers from its outcomes, and the
    headline rows and profile.md are those of its runs. Anything else is one UserError naming the file."""
    from medprobe.profiling.folder import disagreement, verified_run
    from medprobe.records.verify import read_json_object

    profile_json = folder / "profile.json"
    profile = read_json_object(profile_json, "a medprobe profile")
    if not isinstance(profile.get("runs"), list) or not all(isinstance(run, dict) for run in profile["runs"]):
        raise UserError(f"{profile_json} is not a medprobe profile (no list of runs)")
    if not isinstance(profile.get("data"), dict):
        raise UserError(f"{profile_json} is not a medprobe profile (no data)")
    problem = disagreement(folder, profile)
    if problem:
        raise UserError(f"{problem}; the folder is not the profile its profile.json describes: run `medprobe profile` again")
    runs = {run["label"]: verified_run(folder, run) for run in profile["runs"] if run.get("record") is not None}
    check_headline(folder, profile, runs)
    return profile, runs


def check_headline(folder: Path, profile: dict, runs: dict[str, Any]) -> None:
    """Each headline row of profile.json is its run's headline number, interval, n and chance, and profile.md is
    the table those rows give (what `publish results` puts into a card)."""
    for row in profile.get("headline") or []:
        loaded = runs.get(row.get("run"))
        if loaded is None:
            continue
        record, metric = loaded.record, row.get("metric")
        interval = record.intervals.get(metric) or {}
        chance = (record.chance.get(metric) or {}).get("value")
        found = {"value": record.metrics.get(metric), "low": interval.get("low"), "high": interval.get("high")}
        found.update({"n": interval.get("n"), "chance": chance})
        if "validity" in row:  # the facets beside the headline, as the run's record gives them
            found["validity"] = validity_rows(record.metrics, record.intervals, metric)
        for key, value in found.items():
            if key in row and row[key] != value:
                raise UserError(
                    f"{folder / 'profile.json'}: its headline {key} of run {row.get('run')} is {row[key]!r}, the run's "
                    f"record says {value!r}; the profile was edited: run `medprobe profile` again"
                )
    table = folder / "profile.md"
    try:
        expected = markdown(Profile(**profile))
    except (TypeError, KeyError) as err:
        raise UserError(f"{folder / 'profile.json'} is not a profile this medprobe can read ({err})") from None
    if table.is_file() and table.read_text(encoding="utf-8") != expected:
        raise UserError(f"{table} is not the table of {folder / 'profile.json'} (edited?); run `medprobe profile` again")


SUMMARY_FACETS = ("above_bias@", "robust_acc@", "consistency@", "aurc", "ece")  # the printed summary's few


def validity_line(facets: list[dict]) -> str:
    """The summary's one line of facets: above bias, robust acc, consistency, AURC, ECE (where the run has them),
    then the headline's clustered interval and design effect."""
    from medprobe.records.tables import scaled, span

    parts = [
        f"{facet['metric']} {scaled(facet['value'], facet['scale'])} {span(facet, facet['scale'])}"
        for facet in facets
        if any(facet["metric"] == name or (name.endswith("@") and facet["metric"].startswith(name)) for name in SUMMARY_FACETS)
    ]
    head = facets[0]
    if head["facet"] == "headline" and head["clusters"]:
        clustered = span({"low": head["clustered_low"], "high": head["clustered_high"]}, head["scale"])
        effect = head["design_effect"]
        deff = f", deff {effect:.2f}" if isinstance(effect, (int, float)) else ""
        parts.append(f"{head['metric']} clustered {clustered} ({head['clusters']:,} subjects{deff})")
    return "; ".join(parts)


def summary(profile: Profile, out: Path) -> str:
    lines = [f"\nknowledge profile of {profile.model} ({profile.kind}), {profile.seconds:.0f} s:"]
    for row in profile.headline:
        extra = [f"{what} {percent(row[what])}" for what in ("chance", "floor") if row[what] is not None]
        value = percent(row["value"]) if row["value"] is not None else row.get("note", "—")
        if row.get("low") is not None:
            value += f" [{percent(row['low'])}, {percent(row['high'])}], n={row['n']:,}"
        lines.append(
            f"  {row['benchmark']}/{row['config'] or 'all'} {row['prober']}: {row['metric']} {value}"
            + (f" ({', '.join(extra)})" if extra else "")
        )
        if row.get("validity"):
            lines.append(f"    validity: {validity_line(row['validity'])}")
    lines += [f"  skipped {item['benchmark']}: {item['reason']}" for item in profile.skipped]
    lines += [f"  FAILED {item['label']}: {item['error']}" for item in profile.failed]
    # data that is not the benchmark itself, in full: what it is and why its scores are not the benchmark's
    lines += [f"  note: {text}" for text in sample_notes(profile).values()]
    if profile.figure_note:
        lines.append(f"  note: {profile.figure_note}")
    written = ["profile.json", "profile.md"] + ([] if profile.figure_note else ["profile.png"])
    lines.append(f"wrote {', '.join(str(out / name) for name in written)}")
    return "\n".join(lines)
