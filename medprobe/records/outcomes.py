"""The per-item outcomes file beside a results JSON (RUN.outcomes.jsonl): one JSON line per item with its id, its
group, its content digest (`item`), its cluster (`cluster`: e.g. the query's subject, where the task records one) and
its outcome columns; medprobe.records.verify reads it back.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from medprobe.digests import sha256_text

if TYPE_CHECKING:  # numpy only when outcomes are read or written
    from medprobe.stats import Outcomes


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
    """One JSON line per item: its id, its group, its content digest (`item`, when recorded), its cluster (`cluster`,
    when recorded) and each outcome column (a list for a 2-D column)."""
    lines = []
    for row, (item, group) in enumerate(zip(outcomes.ids, outcomes.groups)):
        line: dict = {"id": item, "group": group}
        if outcomes.contents:
            line["item"] = outcomes.contents[row]
        if outcomes.clusters:
            line["cluster"] = outcomes.clusters[row]
        for name, column in outcomes.columns.items():
            value = column[row]
            line[name] = [plain(v) for v in value] if column.ndim > 1 else plain(value)
        lines.append(json.dumps(line, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def outcomes_entry(text: str, out: str | Path, outcomes: Outcomes, unit: str, fields: dict[str, str]) -> dict:
    """The record's `outcomes` entry for the JSON-lines `text` written beside `out`."""
    return {
        "file": outcomes_path(out).name,
        "sha256": sha256_text(text),
        "items": len(outcomes),
        "unit": unit,
        "fields": fields,
    }
