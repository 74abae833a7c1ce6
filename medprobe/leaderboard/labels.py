"""What tells boards and runs apart, in words: a unique title per board, each row's settings against its board's.

    run_settings(record)     # {"prober", "model", every setting, "weights sha256"}: what a row records
    describe(boards)         # titles made unique; per row `settings_difference`, per board `settings_shared`

Boards of one benchmark/config/split/prober differ in their data or in a setting that changes what the
metric means (MedLAMA `--candidates`, `--exclude-head`): each is titled by what separates it from the
others ("· exclude_head on"), so headings, the index's links and the command's lines never repeat. On a
board, two runs of one model differ in some setting (`--layers`): a setting most rows share is the board's
(`settings_shared`), and each row names where it departs from it (`settings_difference`, "layers 3"); a
setting no majority shares is named on every row. Settings are written as `medprobe compare` writes them
(medprobe.comparison.report.setting_text).
"""

from __future__ import annotations

import json
from typing import Any

from medprobe.comparison.report import setting_text

HIDDEN = ("model", "prober")  # a row's own column says the model; a board has one prober
NO_MAJORITY = object()  # a setting whose values no majority of a board's rows shares


def run_settings(record: Any) -> dict:
    """What sets a run apart, as `medprobe compare` compares it (medprobe.comparison.pairing.differing_settings)."""
    settings = {"prober": record.prober, "model": record.model, **record.settings}
    weights = (record.model_identity or {}).get("weights_sha256")
    if weights:
        settings["weights sha256"] = weights
    return settings


def key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def shared_settings(rows: list[dict]) -> dict:
    """Each setting some row holds, with the value more than half of the rows hold (None: no majority)."""
    names = dict.fromkeys(name for row in rows for name in row.get("settings", {}))
    shared = {}
    for name in names:
        counts: dict[str, int] = {}
        for row in rows:
            counts[key(row["settings"].get(name))] = counts.get(key(row["settings"].get(name)), 0) + 1
        top = max(counts, key=counts.get)
        shared[name] = json.loads(top) if 2 * counts[top] > len(rows) else NO_MAJORITY
    return shared


def weights_matter(rows: list[dict], row: dict) -> bool:
    """A row's weights digest is worth saying when another row names the same model with other weights."""
    mine = row["settings"].get("weights sha256")
    return any(other["model"] == row["model"] and other["settings"].get("weights sha256") not in (None, mine) for other in rows)


def describe_rows(board: dict) -> None:
    """`settings_difference` on each row (name -> value where it departs from the board), `settings_shared` on the
    board (the majority's value of each setting that not every row holds alike)."""
    rows = board["rows"]
    shared = shared_settings(rows)
    varying = [name for name in shared if name not in HIDDEN and len({key(r["settings"].get(name)) for r in rows}) > 1]
    board["settings_shared"] = {
        name: shared[name] for name in varying if shared[name] is not NO_MAJORITY and name != "weights sha256"
    }
    for row in rows:
        row["settings_difference"] = {
            name: row["settings"].get(name)
            for name in varying
            if (shared[name] is NO_MAJORITY or key(row["settings"].get(name)) != key(shared[name]))
            and (name != "weights sha256" or weights_matter(rows, row))
        }


def settings_words(settings: dict) -> str:
    """`layers 3, exclude_head on`: settings as a user types them."""
    return ", ".join(f"{name} {setting_text(name, value)}" for name, value in settings.items())


def unique_titles(boards: list[dict]) -> None:
    """Boards that would share a title get what separates them appended: the settings whose values differ among
    them, then their data's fingerprint, then a number."""
    by_title: dict[str, list[dict]] = {}
    for board in boards:
        by_title.setdefault(board["title"], []).append(board)
    for title, same in by_title.items():
        if len(same) == 1:
            continue
        names = [n for n in same[0]["settings"] if len({key(b["settings"].get(n)) for b in same}) > 1]
        for board in same:
            words = settings_words({name: board["settings"].get(name) for name in names})
            board["title"] = f"{title} · {words}" if words else title
        if len({board["title"] for board in same}) < len(same):
            for board in same:
                board["title"] += f" · data {str(board['data']['fingerprint'])[:12]}"
    seen: dict[str, int] = {}
    for board in boards:
        seen[board["title"]] = seen.get(board["title"], 0) + 1
        if seen[board["title"]] > 1:
            board["title"] += f" ({seen[board['title']]})"


def describe(boards: list[dict]) -> None:
    unique_titles(boards)
    for board in boards:
        describe_rows(board)
