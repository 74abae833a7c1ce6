"""The text medprobe writes into a model card: marker-delimited sections, replaced on the next publish.

    with_profile_section(card, profile_md, blocks)  # `publish results PROFILE_DIR`: profile.md + one block per run
    with_results_section(card, blocks)              # `publish results RUN.json`: one block per published run

Each section sits between an HTML-comment start and end marker (`replace_section`, the one place
that edits them): an earlier section is replaced, otherwise the section is appended; the owner's
text around it is kept. A run's block (`run_block`) says what a published number is: each metric's
value with its 95% interval and n, the subset if any, the data's content fingerprint, medprobe's
version and commit, the model's weights hash and the `medprobe probe` command that repeats the run.
The results section keeps the blocks of earlier publishes of other runs (blocks are keyed by
dataset, config, split, prober and subset, like the model-index entries) and replaces the same run's.
No local path goes into a card: the command names the published dataset and model repo, and files
by their names only.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePath

from huggingface_hub import ModelCard

from medprobe.records.record import RunRecord

PROFILE_START = "<!-- medprobe knowledge profile: start (replaced by `medprobe publish results PROFILE_DIR`) -->"
PROFILE_END = "<!-- medprobe knowledge profile: end -->"
RESULTS_START = "<!-- medprobe results: start (replaced by `medprobe publish results RESULTS_JSON`) -->"
RESULTS_END = "<!-- medprobe results: end -->"
RUN_MARKER = re.compile(r"<!-- medprobe run: (?P<key>.+?) -->\n")
RESULTS_HEADING = (
    "## medprobe results\n\n"
    "Each result with its 95% interval and n (values in %), the data it was measured on (content sha256), the "
    "medprobe that measured it and the command that repeats it."
)


def replace_section(card: ModelCard, start_marker: str, end_marker: str, body: str) -> ModelCard:
    """The card with `body` between the two markers: an earlier section is replaced, else appended."""
    section = f"{start_marker}\n{body.strip()}\n{end_marker}"
    text = card.text
    start, end = text.find(start_marker), text.find(end_marker)
    if start != -1 and end > start:
        text = text[:start] + section + text[end + len(end_marker) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    return ModelCard(f"---\n{card.data.to_yaml()}\n---\n{text}")


def section_body(card: ModelCard, start_marker: str, end_marker: str) -> str:
    """The text between the markers of an earlier publish ('' when there is none)."""
    text = card.text
    start, end = text.find(start_marker), text.find(end_marker)
    return text[start + len(start_marker) : end] if start != -1 and end > start else ""


def with_profile_section(card: ModelCard, table: str, blocks: list[str] = ()) -> ModelCard:
    """The card with `table` (a profile.md) and the blocks of its published runs as its knowledge-profile section."""
    body = table.strip().replace("\n# Knowledge profile", "\n## Knowledge profile")
    if body.startswith("# "):
        body = "#" + body  # a section of the card, under the card's own title
    if blocks:
        body += "\n\n### Published runs\n\n" + "\n\n".join(block.replace("\n### ", "\n#### ") for block in blocks)
    return replace_section(card, PROFILE_START, PROFILE_END, body)


def split_blocks(body: str) -> dict[str, str]:
    """{key: block} of the run blocks in a results section, in order."""
    marks = list(RUN_MARKER.finditer(body))
    return {
        m["key"]: body[m.start() : marks[i + 1].start() if i + 1 < len(marks) else len(body)].strip() for i, m in enumerate(marks)
    }


def with_results_section(card: ModelCard, blocks: list[str]) -> ModelCard:
    """The card with its medprobe results section holding `blocks`, and the earlier blocks of other runs."""
    kept = split_blocks(section_body(card, RESULTS_START, RESULTS_END))
    kept.update(split_blocks("\n".join(blocks)))
    return replace_section(card, RESULTS_START, RESULTS_END, RESULTS_HEADING + "\n\n" + "\n\n".join(kept.values()))


# --- one run ------------------------------------------------------------------------------------------


def run_key(record: RunRecord, dataset_id: str, subset: str | None) -> str:
    """What makes two published runs the same result (as the model-index entries: all but the values)."""
    return " | ".join([dataset_id, record.config or "-", record.split, record.prober, subset or "all"]).replace("--", "-")


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.2f}"


def metric_rows(record: RunRecord, metrics: list[str]) -> list[str]:
    from medprobe.stats import plural

    rows = ["| metric | value | 95% interval | n |", "|---|---:|---:|---:|"]
    for name in metrics:
        found = (record.intervals or {}).get(name) or {}
        interval = f"{percent(found['low'])}–{percent(found['high'])}" if found.get("low") is not None else "—"
        n = f"{found['n']:,} {plural(found['unit']) if found.get('unit') else ''}".rstrip() if found.get("n") else "—"
        rows.append(f"| {name} | {percent(record.metrics.get(name))} | {interval} | {n} |")
    return rows


def validity_lines(record: RunRecord) -> list[str]:
    """Is it knowledge? The run's validity facets at its headline's k (medprobe.records.tables.validity_rows): each
    with its value, item-level 95% interval, clustered interval and design effect; [] for a run without facets."""
    from medprobe.records.tables import scaled, span, validity_rows
    from medprobe.registry import task_entry

    try:
        headline = task_entry(record.task).headline
    except KeyError:  # a plugin's task that is not installed here: its runs' facets are still in the record
        headline = next(iter(record.metrics), "")
    rows = validity_rows(record.metrics, record.intervals or {}, headline)
    if not rows:
        return []
    lines = [
        f"Validity (is it knowledge? shares in %, counts whole; the {headline} interval above is item-level, the "
        "clustered one resamples subjects, deff = design effect):",
        "",
        "| facet | metric | value | 95% interval | clustered | deff |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        effect, scale = row["design_effect"], row["scale"]
        clustered = span({"low": row["clustered_low"], "high": row["clustered_high"]}, scale)
        lines.append(
            f"| {row['facet']} | {row['metric']} | {scaled(row['value'], scale)} | {span(row, scale)} | {clustered} "
            f"| {f'{effect:.2f}' if isinstance(effect, (int, float)) else '—'} |"
        )
    return lines + [""]


def fingerprint_text(fingerprint: dict) -> str:
    if not fingerprint.get("sha256"):
        return "not recorded"
    files = fingerprint.get("files") or {}
    text = f"sha256 `{fingerprint['sha256'][:12]}` over {len(files)} data file(s)"
    if fingerprint.get("hub"):
        text += f", read from {fingerprint['hub']} at revision `{str(fingerprint.get('revision', ''))[:12]}`"
    return text


def source_text(source: dict) -> str:
    if not source.get("version"):
        return "a medprobe that did not record its version"
    text = f"medprobe {source['version']}"
    if source.get("commit"):
        text += f" (commit `{source['commit'][:12]}`{', with uncommitted changes' if source.get('dirty') else ''})"
    if source.get("scored_by") == "lm-eval":  # a run `medprobe import lm-eval` read back: lm-eval computed its numbers
        version = (source.get("lm_eval") or {}).get("lm_eval_version")
        return f"lm-evaluation-harness{f' {version}' if version else ''} (scored by lm-eval, imported and checked by {text})"
    return text


def public_command(command: str, dataset_id: str, model_repo: str) -> str:
    """The run's `medprobe probe` command with the published dataset and model, and files by name only."""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    replaced = {"--dataset": dataset_id, "--model": model_repo}
    if words[:1] == ["lm_eval"]:  # an imported lm-eval run: --model is the backend, the model is its args' pretrained=
        replaced = {"--model_args": lm_eval_model_args(words, model_repo)}
    for i, word in enumerate(words[1:], start=1):
        flag = words[i - 1]
        if flag in replaced:
            words[i] = replaced[flag]
        elif flag.startswith("--") and not word.startswith("--") and ("/" in word or "\\" in word or word.startswith("~")):
            words[i] = PurePath(word.replace("\\", "/")).name  # a local file: its name, not where it lives
    return shlex.join(words)


def lm_eval_model_args(words: list[str], model_repo: str) -> str:
    """An lm_eval command's --model_args with the published model as `pretrained`."""
    args = words[words.index("--model_args") + 1].split(",") if "--model_args" in words[:-1] else []
    return ",".join(f"pretrained={model_repo}" if arg.startswith("pretrained=") else arg for arg in args)


def run_block(record: RunRecord, label: str, dataset_id: str, model_repo: str, metrics: list[str], subset: str | None) -> str:
    """A published run, in the card: its metrics with interval and n, what it measured and how to repeat it."""
    weights = (record.model_identity or {}).get("weights_sha256")
    first = next((found for name in metrics if (found := (record.intervals or {}).get(name))), None)
    lines = [
        f"<!-- medprobe run: {run_key(record, dataset_id, subset)} -->",
        f"### {label} · split {record.split} · prober {record.prober}",
        "",
        *metric_rows(record, metrics),
        "",
        *validity_lines(record),
        *([f"- subset: {subset}"] if subset else []),
        f"- data: {dataset_id}, {fingerprint_text(record.data_fingerprint or {})}",
        *([f"- interval: {first['method']}, {first['resamples']:,} resamples"] if first and first.get("resamples") else []),
        f"- measured with {source_text(record.source or {})}" + (f"; model weights sha256 `{weights[:12]}`" if weights else ""),
    ]
    command = public_command(record.command, dataset_id, model_repo) if record.command else ""
    lines.append(f"- repeat: `{command}`" if command else "- repeat: not recorded (a results file of a medprobe before 0.2)")
    return "\n".join(lines)
