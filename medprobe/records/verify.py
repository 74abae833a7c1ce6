"""Reading a run back: the JSON, the files it names, and every number recomputed from the outcomes.

    run = load_run("runs/hard.json")       # LoadedRun(path, record, outcomes), or RecordError

What is checked, in order, each failure one line naming the file (and the metric, with both values):
1. the JSON: UTF-8 text (a binary or UTF-16 file is named as such), one JSON object, the fields of a
   results file with the types they have;
2. the files the JSON names (`files`: outcomes, predictions, plot; written before it, renamed after
   them): each one present is the one it was written with; a JSON beside files of another write is
   an interrupted write (a run killed between two renames), never a run;
3. the outcomes: the file's sha256, one well-formed line per item, as many items as recorded, the
   digest of their ids;
4. the numbers: every overall metric the task's estimators define, each per-group value of those
   metrics, the spread over seeds (`<metric>_std`), and every interval (low, high, n, resamples,
   seed, level) recomputed from the outcomes, equal to what the JSON says.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from medprobe.contracts import UserError
from medprobe.digests import sha256_bytes, sha256_file
from medprobe.local_paths import missing_message
from medprobe.records.record import RunRecord
from medprobe.stats import VARIANT_COLUMN_PREFIX, Estimator, Outcomes, estimate
from medprobe.validity import intervals

RERUN = "run the probe again"


class RecordError(UserError):
    """A results file that cannot be trusted as it is; the message names the file and what disagrees."""


@dataclass
class LoadedRun:
    """A run read back and checked: its results JSON, the record in it and its per-item outcomes."""

    path: Path
    record: RunRecord
    outcomes: Outcomes


# --- the JSON -------------------------------------------------------------------------------------


def read_json_object(path: Path, what: str) -> dict:
    """The JSON object in `path`, or one line saying why it is not `what` (binary, UTF-16, not JSON, not an object)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RecordError(missing_message(str(path), "", f"give {what}")) from None
    except IsADirectoryError:
        raise RecordError(f"{path} is a folder, not {what}") from None
    except OSError as err:
        raise RecordError(f"{path} cannot be read ({err.strerror or err})") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) > 1 and (data[0] == 0 or data[1] == 0)):
        raise RecordError(f"{path} is not {what}: it is UTF-16 text or binary, and medprobe writes UTF-8 JSON")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RecordError(
            f"{path} is not {what}: not UTF-8 text (byte {err.start} is 0x{data[err.start]:02x}; a binary file?)"
        ) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(f"{path} is not {what}: not JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    if not isinstance(value, dict):
        raise RecordError(f"{path} is not {what}: its JSON is a {type(value).__name__}, not an object")
    return value


FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "benchmark": (str,),
    "dataset": (str,),
    "config": (str, type(None)),
    "split": (str,),
    "prober": (str,),
    "model": (str, type(None)),
    "seed": (int, type(None)),
    "settings": (dict,),
    "metrics": (dict,),
    "per_group": (dict,),
    "timings": (dict,),
    "counts": (dict,),
    "intervals": (dict,),
    "chance": (dict,),
    "outcomes": (dict, type(None)),
    "files": (dict,),
    "data_fingerprint": (dict,),
    "subset": (dict,),
    "model_identity": (dict,),
    "source": (dict,),
    "command": (str,),
    "citations": (list,),
    "task": (str, type(None)),
    "versions": (dict,),
    "created": (str,),
}
REQUIRED = ("benchmark", "dataset", "split", "prober", "metrics")


def record_from(data: dict, path: Path) -> RunRecord:
    """The RunRecord of a results JSON's object: known fields only, each of its type."""
    what = "a medprobe results file"
    known = {f.name for f in fields(RunRecord)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise RecordError(f"{path} is not {what}: unknown field(s) {', '.join(unknown)} (written by a newer medprobe?)")
    missing = [name for name in REQUIRED if name not in data]
    if missing:
        raise RecordError(f"{path} is not {what}: no {', '.join(missing)}")
    for name, value in data.items():
        allowed = FIELD_TYPES.get(name)
        if allowed and (not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed)):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in allowed)
            raise RecordError(f"{path}: field {name!r} is {type(value).__name__}, expected {names}")
    return RunRecord(**data)


def load_record_file(path: str | Path) -> RunRecord:
    """The record of a results JSON, its fields checked (not its numbers: `load_run` does that)."""
    path = Path(path)
    return record_from(read_json_object(path, "a medprobe results file"), path)


# --- the files the JSON names ---------------------------------------------------------------------


def check_written_together(record: RunRecord, path: Path) -> None:
    """Every file the record names (`files`) that is present is the one written with it."""
    for name, digest in record.files.items():
        companion = path.parent / name
        if companion.is_file() and sha256_file(companion) != digest:
            raise RecordError(
                f"{path} and {companion} are not of one run (its sha256 is not the one the JSON recorded): an interrupted "
                f"write (a run killed while renaming its files) or a file changed since; {RERUN}"
            )


def read_run_outcomes(record: RunRecord, path: str | Path) -> Outcomes:
    """The per-item outcomes of a record, read from the file its JSON names, checked against its sha256."""
    path = Path(path)
    entry = record.outcomes
    if not entry:
        raise RecordError(
            f"{path} records no per-item outcomes (written by a medprobe older than 0.2, or with --out but no outcomes); "
            f"{RERUN} to compare or publish it"
        )
    if not isinstance(entry.get("file"), str) or not isinstance(entry.get("sha256"), str):
        raise RecordError(f"{path}: its outcomes entry names no file and sha256")
    outcomes_file = path.parent / entry["file"]
    try:
        data = outcomes_file.read_bytes()
    except OSError as err:
        raise RecordError(
            f"{path} names its per-item outcomes {outcomes_file}, which cannot be read ({err.strerror or err}); "
            "keep the .outcomes.jsonl file beside its results JSON"
        ) from None
    if sha256_bytes(data) != entry["sha256"]:
        raise RecordError(
            f"{outcomes_file} is not the outcomes file {path} was written with (its sha256 differs): an interrupted write, "
            f"or a file changed or replaced since; {RERUN}"
        )
    outcomes = parse_outcomes(data, outcomes_file)
    if entry.get("items") is not None and entry["items"] != len(outcomes):
        raise RecordError(f"{path} records {entry['items']} outcomes, {outcomes_file} holds {len(outcomes)}; {RERUN}")
    return outcomes


def parse_outcomes(data: bytes, path: Path) -> Outcomes:
    """Outcomes from the bytes of an outcomes file: one JSON object a line with id, group, the item digest
    (`item`, from medprobe 0.2 on), the item's cluster (`cluster`, where the task records one) and numeric columns
    (numbers, null, or lists of them)."""
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise RecordError(f"{path} is not an outcomes file: not UTF-8 text") from None
    try:
        rows = json.loads("[" + ",".join(lines) + "]")  # one parse: 3x faster than a line at a time
    except json.JSONDecodeError:
        rows = None
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        for number, line in enumerate(lines, start=1):  # say which line
            try:
                if not isinstance(json.loads(line), dict):
                    raise ValueError("not a JSON object")
            except ValueError as err:
                raise RecordError(f"{path}, line {number}: not an outcomes line ({err})") from None
    if not rows:
        raise RecordError(f"{path} holds no outcomes")
    names = [key for key in rows[0] if key not in TEXT_FIELDS]
    expected = set(rows[0])
    for number, row in enumerate(rows, start=1):
        if set(row) != expected:
            raise RecordError(f"{path}, line {number}: fields {sorted(row)}, expected {sorted(expected)} as on line 1")
    if not {"id", "group"} <= expected:
        raise RecordError(f"{path}, line 1: no id or group")
    ids, groups = [row["id"] for row in rows], [row["group"] for row in rows]
    for label, values in (
        ("id", ids),
        ("group", groups),
        *((label, [row[label] for row in rows]) for label in ("item", "cluster") if label in expected),
    ):
        if {type(value) for value in values} != {str}:
            bad = next(number for number, value in enumerate(values, start=1) if not isinstance(value, str))
            raise RecordError(f"{path}, line {bad}: {label} must be a string")
    columns = {}
    for name in names:
        values = [row[name] for row in rows]
        check_numbers(values, name, path)
        columns[name] = values
    try:
        return Outcomes.build(
            ids,
            groups,
            columns,
            [row["item"] for row in rows] if "item" in expected else None,
            [row["cluster"] for row in rows] if "cluster" in expected else None,
        )
    except ValueError as err:  # a repeated id, ragged columns
        raise RecordError(f"{path}: {err}") from None


NUMBER_TYPES = {int, float, type(None)}
TEXT_FIELDS = ("id", "group", "item", "cluster")  # an outcomes line's strings; every other field is a numeric column


def check_numbers(values: list, name: str, path: Path) -> None:
    """A column holds numbers or nulls, or lists of them all of one length: never a bool or a string read as a number."""
    width = len(values[0]) if isinstance(values[0], list) else None

    def fits(value: Any) -> bool:
        if width is None:
            return type(value) in NUMBER_TYPES
        return isinstance(value, list) and len(value) == width and {type(v) for v in value} <= NUMBER_TYPES

    kinds = {type(value) for value in values}
    if (width is None and kinds <= NUMBER_TYPES) or (width is not None and all(map(fits, values))):
        return
    bad = next(number for number, value in enumerate(values, start=1) if not fits(value))
    shape = "a number or null" if width is None else f"a list of {width} numbers or nulls"
    raise RecordError(f"{path}, line {bad}: {name} is {values[bad - 1]!r}; expected {shape}")


# --- the numbers ----------------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Two recorded numbers agree (NaN and null are the same missing value)."""
    a_missing = a is None or (isinstance(a, float) and math.isnan(a))
    b_missing = b is None or (isinstance(b, float) and math.isnan(b))
    if a_missing or b_missing:
        return a_missing and b_missing
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def disagreement(path: Path, what: str, stated: Any, recomputed: Any, outcomes: Outcomes, unit: str) -> RecordError:
    from medprobe.stats import plural

    return RecordError(
        f"{path}: {what} is {stated!r} in the file but {recomputed!r} from its {len(outcomes):,} per-item outcomes "
        f"({plural(unit)}); the record was edited or mixed with another run's files: {RERUN}"
    )


def task_of(record: RunRecord, path: Path) -> Any:
    from medprobe.registry import load, registry

    if not record.task:
        raise RecordError(f"{path} does not record its task (written by an older medprobe); {RERUN}")
    tasks = registry().tasks
    if record.task not in tasks:
        raise RecordError(
            f"{path} is a run of task {record.task!r}, which is not installed here (known: {', '.join(tasks)}); "
            "install the package that provides it"
        )
    return load(tasks[record.task].target)


def estimators_of(record: RunRecord, task: Any, path: Path) -> dict[str, Estimator]:
    try:
        return dict(task.estimators(record.settings))
    except (KeyError, TypeError, ValueError) as err:
        raise RecordError(f"{path}: its settings lack what the {record.task} metrics need ({err!r}); {RERUN}") from None


def verify_numbers(record: RunRecord, outcomes: Outcomes, path: Path) -> None:
    """Every number of the record that its outcomes determine equals what they give."""
    from medprobe.provenance import items_digest

    task = task_of(record, path)
    unit = (record.outcomes or {}).get("unit") or getattr(task, "outcome_unit", "item")
    subset = record.subset or {}
    if subset.get("items") is not None and subset["items"] != len(outcomes):
        raise disagreement(path, "subset.items", subset["items"], len(outcomes), outcomes, unit)
    if subset.get("item_ids_sha256") and subset["item_ids_sha256"] != items_digest(outcomes.ids):
        raise RecordError(f"{path}: its outcomes are of other items than the record's item ids digest names; {RERUN}")
    estimators = estimators_of(record, task, path)
    for name, estimator in estimators.items():
        if name in record.metrics:
            value = estimate_from(outcomes, estimator, name, path)
            if not same(record.metrics[name], value):
                raise disagreement(path, name, record.metrics[name], value, outcomes, unit)
    verify_seed_spread(record, outcomes, estimators, getattr(task, "seed_spread", ""), path, unit)
    verify_per_group(record, outcomes, estimators, path, unit)
    verify_intervals(record, outcomes, estimators, path, unit)


def seed_columns(outcomes: Outcomes) -> list[str]:
    """The 2-D outcome columns that hold one value per seed (items, seeds): every 2-D column but the variant ones."""
    return [name for name, array in outcomes.columns.items() if array.ndim > 1 and not name.startswith(VARIANT_COLUMN_PREFIX)]


def per_seed(outcomes: Outcomes, estimator: Estimator, seeds: int) -> list[float]:
    """The metric of each seed alone: every seed column (items, seeds) cut to one seed's column."""
    values = []
    cut = set(seed_columns(outcomes))
    for seed in range(seeds):
        columns = {name: array[:, seed : seed + 1] if name in cut else array for name, array in outcomes.columns.items()}
        one = Outcomes(
            outcomes.ids, outcomes.groups, columns, outcomes.starts, outcomes.group_names, outcomes.contents, outcomes.clusters
        )
        values.append(estimate(one, estimator))
    return values


def estimate_from(outcomes: Outcomes, estimator: Estimator, name: str, path: Path) -> float:
    """The metric on the outcomes; an outcomes file without a column it reads is one line, not a traceback."""
    try:
        return estimate(outcomes, estimator)
    except KeyError as err:
        raise RecordError(f"{path}: its outcomes have no {err.args[0]!r} column, which {name} needs; {RERUN}") from None


def verify_seed_spread(
    record: RunRecord, outcomes: Outcomes, estimators: dict[str, Estimator], spread: str, path: Path, unit: str
) -> None:
    """`<metric>_std` of a task trained with several seeds: the std of the metric of each seed alone."""
    widths = {outcomes.columns[name].shape[1] for name in seed_columns(outcomes)}
    if not spread or len(widths) != 1:
        return
    (seeds,) = widths
    for name, estimator in estimators.items():
        stated = record.metrics.get(f"{name}_std")
        if stated is None:
            continue
        values = per_seed(outcomes, estimator, seeds)
        value = 0.0 if seeds < 2 else statistics.stdev(values) if spread == "sample" else statistics.pstdev(values)
        if not same(stated, value):
            raise disagreement(path, f"{name}_std", stated, value, outcomes, unit)


def verify_per_group(record: RunRecord, outcomes: Outcomes, estimators: dict[str, Estimator], path: Path, unit: str) -> None:
    """Each per-group value of a metric the estimators define, recomputed on that group's items."""
    for group, values in record.per_group.items():
        if not isinstance(values, dict) or group not in outcomes.group_names:
            continue
        wanted = [
            name for name in estimators if name in values and (values[name] is None or isinstance(values[name], (int, float)))
        ]
        if not wanted:
            continue
        items = outcomes.group(group)
        for name in wanted:
            value = estimate(items, estimators[name])
            if not same(values[name], value):
                raise disagreement(path, f"{name} of {group!r}", values[name], value, outcomes, unit)


INTERVAL_KEYS = ("low", "high", "level", "n", "method", "resamples", "seed", "unit", "groups", "facet", "scale")
CLUSTERED_KEYS = ("low", "high", "clusters", "design_effect", "method")


def verify_intervals(record: RunRecord, outcomes: Outcomes, estimators: dict[str, Estimator], path: Path, unit: str) -> None:
    """Every recorded interval, recomputed with its own resamples, seed and level, is the one recorded."""
    if not record.intervals:
        return
    unknown = [name for name in record.intervals if name not in estimators]
    if unknown:
        raise RecordError(f"{path}: intervals of {', '.join(unknown)}, which the {record.task} task does not define; {RERUN}")
    settings = {(e.get("resamples"), e.get("seed"), e.get("level")) for e in record.intervals.values() if isinstance(e, dict)}
    if len(settings) != 1 or len(record.intervals) != sum(isinstance(e, dict) for e in record.intervals.values()):
        raise RecordError(f"{path}: its intervals do not share one bootstrap (resamples, seed, level); {RERUN}")
    ((resamples, seed, level),) = settings
    if not (
        isinstance(resamples, int) and resamples >= 1 and isinstance(seed, int) and isinstance(level, float) and 0 < level < 1
    ):
        raise RecordError(f"{path}: its intervals name no valid resamples, seed and level; {RERUN}")
    found = intervals(
        outcomes, {name: estimators[name] for name in record.intervals}, resamples=resamples, seed=seed, level=level
    )
    for name, stated in record.intervals.items():
        for key in INTERVAL_KEYS:
            if not same(stated.get(key), found[name].get(key)):
                raise disagreement(
                    path, f"the 95% interval's {key} of {name}", stated.get(key), found[name].get(key), outcomes, unit
                )
        verify_clustered(path, name, stated.get("clustered"), found[name].get("clustered"), outcomes, unit)
        if "seed_std" in stated and not same(stated["seed_std"], record.metrics.get(f"{name}_std")):
            raise disagreement(
                path, f"the seed spread of {name}", stated["seed_std"], record.metrics.get(f"{name}_std"), outcomes, unit
            )


def verify_clustered(path: Path, name: str, stated: Any, found: dict | None, outcomes: Outcomes, unit: str) -> None:
    """The clustered interval beside an item-level one (medprobe.validity), recomputed: both present or both absent."""
    if stated is None or found is None:
        if stated is not found:
            what = "records a clustered interval its outcomes give none of" if found is None else "lacks its clustered interval"
            raise RecordError(f"{path}: {name} {what}; {RERUN}")
        return
    if not isinstance(stated, dict):
        raise RecordError(f"{path}: the clustered interval of {name} is not an object; {RERUN}")
    for key in CLUSTERED_KEYS:
        if not same(stated.get(key), found.get(key)):
            raise disagreement(path, f"the clustered interval's {key} of {name}", stated.get(key), found.get(key), outcomes, unit)
    groups = stated.get("by_group")
    if (groups is None) != (found.get("by_group") is None) or (groups is not None and not isinstance(groups, dict)):
        raise RecordError(f"{path}: the design effects by group of {name} are not the ones its outcomes give; {RERUN}")
    for group, value in (found.get("by_group") or {}).items():
        if group not in groups or not same(groups[group], value):
            raise disagreement(path, f"the design effect of {name} in {group!r}", groups.get(group), value, outcomes, unit)


# --- the loader -----------------------------------------------------------------------------------


def load_run(path: str | Path) -> LoadedRun:
    """A results JSON and its outcomes, every check above passed; RecordError (one line) otherwise."""
    path = Path(path)
    if path.is_dir():
        raise RecordError(f"{path} is a folder; give a results JSON (a profile's runs are under {path / 'runs'})")
    record = load_record_file(path)
    check_written_together(record, path)
    outcomes = read_run_outcomes(record, path)
    verify_numbers(record, outcomes, path)
    return LoadedRun(path, record, outcomes)
