"""A cell's runs and its file OUT/cells/<cell-id>.json: each run is a resumable unit, reused only when its
results JSON verifies itself and agrees with what the cell file says of it.

A cell file lists its runs, each with its run's key (what decides its result: medprobe.reproduce.runner's
request_key of that one request), the results JSON it names under OUT/runs/ and what the report takes from
it (metrics, intervals, n, data fingerprint, model identity): those runs are the cell's run journal, resumed
through medprobe.journal as profile's progress.json is. It is written after each run of a cell with
a `repeat` (status "partial") and when the cell is done (status "finished"). A later reproduce into the same
OUT reuses a run only when its key is the one this request gives, its results JSON passes
medprobe.records.load_run (files, hashes, every number recomputed from the per-item outcomes), it is a run
of this request (task, prober, config, split, model), and the cell file's numbers equal that record's; else
it says why in one line and runs it again. A finished cell is reused whole only when everything it states
equals what its verified runs give.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from medprobe import distributed
from medprobe.atomic import write_text_atomically
from medprobe.journal import Journal, NotReusable
from medprobe.records import RecordError, load_run
from medprobe.records.verify import same
from medprobe.reproduce.recipe import Figure

RUN_FILE = re.compile(r"runs/[^/\\]+\.json")  # a run file a cell may name: in OUT/runs, nowhere else

Printer = Callable[[str], None]


def cell_path(out: Path, cell_id: str) -> Path:
    return out / "cells" / f"{cell_id}.json"


def read_cell(out: Path, cell_id: str, print_fn: Printer) -> dict | None:
    path = cell_path(out, cell_id)
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        stored = None
    if not isinstance(stored, dict) or not isinstance(stored.get("runs"), list):
        print_fn(f"cell {cell_id}: cells/{cell_id}.json is not a cell file reproduce wrote: run again")
        return None
    return stored


def write_cell(out: Path, result: dict) -> None:
    if distributed.is_main_process():
        write_text_atomically(cell_path(out, result["cell"]), json.dumps(result, indent=2, sort_keys=True) + "\n")


def plain(value: Any) -> Any:
    """`value` as a cell file holds it (JSON types: tuples as lists), so fresh and stored results compare."""
    return json.loads(json.dumps(value, default=str))


def agree(a: Any, b: Any) -> bool:
    """Two JSON values are equal, numbers as medprobe.records compares them (NaN equals NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(agree(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(agree(x, y) for x, y in zip(a, b))
    return same(a, b)


def run_entry(out: Path, file: str, record: Any, value: Any, run_key: str, figures: tuple[Figure, ...]) -> dict:
    """What a cell file says of one run: where its results JSON is and what the report takes from it."""
    return plain(
        {
            "file": file,
            "out": str(out / file),
            "run_key": run_key,
            "repeat_value": value,
            "metrics": {f.metric: record.metrics.get(f.metric) for f in figures},
            "intervals": {f.metric: record.intervals.get(f.metric) for f in figures},
            "n": record.subset.get("items"),
            "subset": record.subset.get("subset", False),
            "data_fingerprint": record.data_fingerprint,
            "model_identity": record.model_identity,
            "command": record.command,
        }
    )


def entry_difference(stored: dict, fresh: dict) -> str | None:
    """The first thing a stored run entry says otherwise than its verified run: a metric, its interval, n, ..."""
    for metric, value in fresh["metrics"].items():
        if not agree((stored.get("metrics") or {}).get(metric), value):
            return metric
    for metric, value in fresh["intervals"].items():
        if not agree((stored.get("intervals") or {}).get(metric), value):
            return f"interval of {metric}"
    for key in fresh:
        if key != "out" and not agree(stored.get(key), fresh[key]):
            return key
    return None


def not_of_request(record: Any, request: Any) -> str | None:
    """How a verified run differs from the request it should be a run of (None: it is one)."""
    for name in ("task", "prober", "config", "split", "model"):
        found, wanted = getattr(record, name), getattr(request, name)
        if found != wanted:
            return f"its {name} is {'none' if found is None else found}, not {'none' if wanted is None else wanted}"
    if Path(record.dataset).expanduser().resolve() != Path(request.dataset).expanduser().resolve():
        return f"its data is {record.dataset}, not {request.dataset}"
    return None


def verified(out: Path, planned: Any, index: int, entry: dict) -> dict:
    """The stored entry of run `index`, re-read from its results JSON, when everything checks; else NotReusable, saying why."""
    cell, file = planned.cell.id, entry.get("file")
    if not isinstance(file, str) or not RUN_FILE.fullmatch(file):
        raise NotReusable(f"cell {cell}: its stored result names no run file under runs/: run again")
    try:
        loaded = load_run(out / file)
    except RecordError as err:
        raise NotReusable(f"cell {cell}: {file} cannot be reused, run again: {err}") from None
    other = not_of_request(loaded.record, planned.requests[index])
    if other:
        raise NotReusable(f"cell {cell}: {file} is not a run of this cell ({other}): run again")
    fresh = run_entry(out, file, loaded.record, planned.values[index], planned.run_keys[index], planned.cell.figures)
    differs = entry_difference(entry, fresh)
    if differs:
        raise NotReusable(f"cell {cell}: its stored result disagrees with {file} ({differs}): run again")
    return fresh


def reusable(out: Path, planned: Any, stored: dict | None, print_fn: Printer) -> list[dict | None]:
    """Per run of the cell: its verified stored entry, or None (run it); the cell file's runs are its journal."""
    journal = Journal.of((stored or {}).get("runs", []), name="file", key="run_key")
    index = {file: number for number, file in enumerate(planned.files)}
    resumed = journal.resume(
        zip(planned.files, planned.run_keys), lambda file, run: verified(out, planned, index[file], run.entry)
    )
    for _, why in resumed.refused:
        print_fn(why)
    return [resumed.taken.get(file) for file in planned.files]


def cell_result(planned: Any, entries: list[dict], status: str = "finished") -> dict:
    """What the report needs of a cell: the model as run, the overrides, its runs and per figure the measured value."""
    figures = planned.cell.figures
    result = {
        "cell": planned.cell.id,
        "key": planned.key,
        "status": status,
        "model": {"ran": planned.model, "mapped": planned.mapped, "substitute": planned.substitute and not planned.mapped},
        "overrides": planned.overridden,
        "subset": any(r["subset"] for r in entries),
        "runs": entries,
    }
    if status == "finished":
        result["measured"] = {f.metric: measured(f.metric, entries) for f in figures}
    return plain(result)


def result_difference(stored: dict, fresh: dict) -> str | None:
    """The first thing a finished cell file says otherwise than what its verified runs give."""
    for metric, value in fresh["measured"].items():
        if not agree((stored.get("measured") or {}).get(metric), value):
            return f"measured {metric}"
    for key in fresh:
        if key == "runs":
            if len(stored.get("runs", [])) != len(fresh["runs"]):
                return "runs"
        elif not agree(stored.get(key), fresh[key]):
            return key
    return None


def measured(metric: str, runs: list[dict]) -> dict | None:
    """One run: its value and bootstrap interval. Several (a repeat): their mean and standard deviation
    (population std, as numpy's default, over the runs), as the paper's mean ± std is."""
    values = [r["metrics"].get(metric) for r in runs]
    if any(not isinstance(v, (int, float)) for v in values):
        return None
    if len(runs) == 1:
        interval = runs[0]["intervals"].get(metric) or {}
        return {"value": values[0], "low": interval.get("low"), "high": interval.get("high"), "runs": 1, "n": interval.get("n")}
    return {"value": statistics.fmean(values), "std": statistics.pstdev(values), "runs": len(values), "n": runs[0]["n"]}


def run_cell(planned: Any, out: Path, done_by_key: dict[str, dict], print_fn: Printer) -> dict:
    """The cell's result: reused where its stored runs verify, the other runs run (each written as it ends)."""
    cell = planned.cell.id
    stored = read_cell(out, cell, print_fn)
    if planned.key in done_by_key:  # another cell of this command ran the same request
        print_fn(f"cell {cell}: finished before (same request), not rerun")
        result = {**done_by_key[planned.key], "cell": cell}
        if stored is None or not agree(stored, result):
            write_cell(out, result)
        return result
    entries = reusable(out, planned, stored, print_fn)
    if all(entries):
        result = cell_result(planned, entries)
        differs = result_difference(stored, result) if stored.get("status") == "finished" else None
        if differs is None:  # finished, or every run of a partial cell done before a kill
            print_fn(f"cell {cell}: finished before (same request), not rerun")
            if not agree(stored, result):  # the same runs, named from another spelling of OUT, or partial
                write_cell(out, result)
            done_by_key[planned.key] = result
            return result
        print_fn(f"cell {cell}: its stored result disagrees with its run files ({differs}): run again")
        entries = [None] * len(entries)
    run_missing(planned, out, entries, print_fn)
    result = cell_result(planned, entries)
    write_cell(out, result)
    done_by_key[planned.key] = result
    return result


def run_missing(planned: Any, out: Path, entries: list[dict | None], print_fn: Printer) -> None:
    """Run every run of the cell that has no entry, writing the cell file (status partial) after each one."""
    from medprobe.run import run

    cell, total = planned.cell.id, len(entries)
    missing = [index for index, entry in enumerate(entries) if entry is None]
    reused = total - len(missing)
    if reused:
        print_fn(
            f"cell {cell}: {reused} of {total} runs finished before (same request), reused; running the other {len(missing)}"
        )
    else:
        print_fn(f"cell {cell}: {planned.cell.prober} on {planned.model} ({total} run(s))")
    for index in missing:
        record = run(planned.requests[index], print_fn=lambda _text: None)
        entries[index] = run_entry(
            out, planned.files[index], record, planned.values[index], planned.run_keys[index], planned.cell.figures
        )
        if total > 1:  # progress inside the cell: a kill now loses at most the run in progress
            write_cell(out, cell_result(planned, [entry for entry in entries if entry], status="partial"))
