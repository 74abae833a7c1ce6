"""An exported task's run as lm-evaluation-harness logged it (`--log_samples`): what `medprobe import lm-eval`
reads back, and the checks every benchmark's import shares.

    task = LoggedTask.read(path, name, metadata, version, reported)   # samples_<task>_<time>.jsonl, parsed
    task.lls[task.starts[i]:task.starts[i + 1]]                         # doc i's log-likelihood of each choice
    check_items(task, identity)                                         # each doc is the item the export recorded

lm-eval 0.4 writes one JSON line per doc: `doc_id`, `doc` (the row after `process_docs`: for medprobe's tasks
stamped with `medprobe_id` and `medprobe_item`), `target`, `arguments` (each choice's context and
continuation), `resps` and `filtered_resps` (each choice's `[log-likelihood, is_greedy]`, as strings),
`filter`, `metrics` and the per-doc value of each metric. A MedLAMA hard run is 15,329 lines of about 300
choices each (1 GB): the reader parses the doc, `filtered_resps` and the per-doc values, and skips the
arguments and raw responses (two thirds of the bytes; `filtered_resps` is `resps` under lm-eval's `none`
filter, the only one a multiple-choice task has). A line the fast path cannot read is parsed whole.
"""

from __future__ import annotations

import json
import math
import mmap
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from medprobe.contracts import UserError
from medprobe.digests import sha256_bytes
from medprobe.tasks import Scored
from medprobe.tasks.lm_eval_utils import items_sha256

DOC_ID, DOC, TARGET = b'{"doc_id": ', b', "doc": ', b', "target": '
FILTERED, FILTER = b', "filtered_resps": ', b', "filter": '
DECODE = json.JSONDecoder().decode  # a str's JSON, without json.loads' checks of its type and encoding
CANDIDATES = b', "candidates": ['  # MedLAMA's docs end with their relation's candidates: the same list for many docs
CACHED = 64  # candidates lists kept per file (a MedLAMA relation's file has one)
Buffer = bytes | mmap.mmap  # a samples file's bytes: mapped, or read where it cannot be mapped
# how every exported task scores its choices, in the words of medprobe's causal-lm prober, whose settings a record of
# that prober holds: `compare` then shows only what really differs (the prober, the backend, the batch size)
SCORING = {
    "length_normalization": "none",
    "score_suffix": True,
    "literal_template": False,
    "scoring": "total log-probability of the answer and suffix tokens given the prompt before the slot",
}


@dataclass
class LoggedTask:
    """One exported task's logged run: its docs in lm-eval's order, every choice's log-likelihood, lm-eval's per-doc
    metric values and its reported numbers."""

    name: str  # the lm-eval task, e.g. medprobe_medlama_hard_may_treat
    metadata: dict  # the `medprobe` block of the task's metadata (medprobe.export.lm_eval.task_metadata)
    version: object  # lm-eval's version of the task
    path: Path  # its samples_<task>_<time>.jsonl
    doc_ids: list[int] = field(default_factory=list)
    docs: list[dict] = field(default_factory=list)
    lls: np.ndarray = field(default_factory=lambda: np.zeros(0))  # every doc's choices, doc after doc
    starts: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))  # doc i: lls[starts[i]:starts[i+1]]
    per_doc: dict[str, list] = field(default_factory=dict)  # lm-eval's per-doc metric values, by metric
    reported: dict[str, float] = field(default_factory=dict)  # lm-eval's result for the task, by metric (filter none)

    sha256: str = ""  # of the samples file

    @classmethod
    def read(cls, path: Path, name: str, metadata: dict, version: object, reported: dict[str, float]) -> LoggedTask:
        task = cls(name, metadata, version, path, reported=reported)
        task.doc_ids, task.docs, task.lls, task.starts, task.per_doc, task.sha256 = read_samples(path)
        return task

    def choices(self, doc: int) -> np.ndarray:
        """The log-likelihood of each choice of the `doc`-th doc (in the choices' order)."""
        return self.lls[self.starts[doc] : self.starts[doc + 1]]


@dataclass
class Imported:
    """What a benchmark's import hook (`imported(tasks, groups)` beside its export hook) makes of the logged tasks of
    one record: what a run of its task would have scored, the outcome columns described, and for a ranking task its
    top-k names per query (the `--predictions` lines `medprobe review export` reads)."""

    scored: Scored
    outcome_fields: dict[str, str]
    predictions: list[dict] | None = None
    # a task option that lm_eval's `--limit N` over these tasks equals (MedLAMA: the first N queries of each relation,
    # `--per-relation N`): how a subset is recorded; None: `limit`
    limit_option: str | None = None


# --- reading a samples file -------------------------------------------------------------------------


def read_samples(path: Path) -> tuple[list[int], list[dict], np.ndarray, np.ndarray, dict[str, list], str]:
    """(doc ids, docs, every choice's log-likelihood, each doc's first choice, lm-eval's per-doc metric values, the
    file's sha256) of a samples file; UserError (one line naming the file and line) when it is not one. The file is
    mapped into memory (not copied: a hard run's is 1 GB), hashed whole on a second thread, and only the parts of each
    line that are needed are copied out."""
    try:
        with open(path, "rb") as handle, mapped(handle) as data:
            with ThreadPoolExecutor(max_workers=1) as pool:  # left once the hash is done, before the mapping closes
                digest = pool.submit(sha256_bytes, data)  # hashlib lets go of the GIL on large buffers
                found = parse_samples(data, path)
            return (*found, digest.result())
    except OSError as err:
        raise UserError(f"{path} cannot be read ({err.strerror or err})") from None


@contextmanager
def mapped(handle: BinaryIO) -> Iterator[Buffer]:
    """The bytes of an open file: mapped, and unmapped on leaving; read whole where it cannot be mapped (an empty file,
    a pipe, a file system without mmap)."""
    try:
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # ValueError: an empty file
        data = None
    if data is None:
        yield handle.read()
        return
    try:
        yield data
    finally:
        data.close()  # nothing read from it is a view into it: every part taken out is a copy


def parse_samples(data: Buffer, path: Path) -> tuple[list[int], list[dict], np.ndarray, np.ndarray, dict[str, list]]:
    """`read_samples` of the bytes of a samples file."""
    doc_ids, docs, segments, tails = [], [], [], []
    cache: dict[bytes, list] = {}
    position, number = 0, 0
    while position < len(data):
        end = data.find(b"\n", position)
        end = len(data) if end < 0 else end
        if end > position:
            number += 1
            parsed = fast_line(data, position, end, cache) or whole_line(data[position:end], path, number)
            doc_ids.append(parsed[0])
            docs.append(parsed[1])
            segments.append(parsed[2])
            tails.append(parsed[3])
        position = end + 1
    if not docs:
        raise UserError(f"{path} holds no samples (an lm-eval run stopped before it logged any?)")
    lls, counts = log_likelihoods(segments, path)
    if np.isnan(lls).any():
        raise UserError(
            f"{path}, line {int(np.repeat(np.arange(len(counts)), counts)[np.isnan(lls)][0]) + 1}: a NaN log-likelihood"
        )
    per_doc: dict[str, list] = {}
    for number, tail in enumerate(tails, start=1):
        if tail.get("filter") != "none":
            raise UserError(
                f"{path}, line {number}: filter {tail.get('filter')!r}; medprobe's tasks are scored unfiltered ('none')"
            )
        for metric in tail.get("metrics") or []:
            per_doc.setdefault(metric, []).append(tail.get(metric))
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return doc_ids, docs, lls, starts, per_doc


def holds_at(data: Buffer, text: bytes, at: int) -> bool:
    """Whether `text` is at `at` in data (mmap has no startswith)."""
    return data[at : at + len(text)] == text


def fast_line(data: Buffer, start: int, end: int, cache: dict[bytes, list]) -> tuple[int, dict, bytes, dict] | None:
    """(doc_id, doc, the text of filtered_resps, the rest after it) of the line data[start:end], its keys in lm-eval
    0.4's order, without copying or parsing the arguments and raw responses; None when the line is not in that order
    or not valid there (then it is parsed whole, which names what is wrong)."""
    if not holds_at(data, DOC_ID, start):
        return None
    cut = data.find(DOC, start, end)
    rest = data.rfind(FILTER, start, end)  # the short tail, searched from the end
    if cut < 0 or rest < 0:  # (rest -1 as an end would search the rest of the file)
        return None
    resps = data.rfind(FILTERED, start, rest)
    if resps < 0:
        return None
    try:
        doc_id = int(data[start + len(DOC_ID) : cut])
        doc = fast_doc(data, cut + len(DOC), end, cache)
        tail = DECODE("{" + data[rest + 2 : end].decode())
    except (ValueError, UnicodeDecodeError):
        return None
    if doc is None or not isinstance(tail, dict):
        return None
    return doc_id, doc, data[resps + len(FILTERED) : rest], tail


def fast_doc(data: Buffer, start: int, end: int, cache: dict[bytes, list]) -> dict | None:
    """The doc that starts at `start`. A `candidates` list that ends it (MedLAMA's: the same for all the docs of a
    relation, whose task has a samples file of its own) is compared byte for byte with those already read, and parsed
    only when it is new."""
    cut = data.find(CANDIDATES, start, end)  # a key: no string holds it unescaped
    if cut < 0:
        stop = data.find(TARGET, start, end)  # no string holds `, "target": ` unescaped: the key after the doc
        doc = DECODE(data[start:stop].decode()) if stop >= 0 else None
        return doc if isinstance(doc, dict) else None
    names_at = cut + len(CANDIDATES) - 1
    known = next((text for text in cache if holds_at(data, text, names_at)), None)  # the list, `}` and the next key
    if known is not None:
        names = cache[known]
    else:
        stop = data.find(TARGET, names_at, end)
        if stop < 0 or not holds_at(data, b"]}", stop - 2):
            return None
        names = DECODE(data[names_at : stop - 1].decode())
        if len(cache) < CACHED:  # a file of many different lists stays linear: the others are parsed each time
            cache[data[names_at : stop + len(TARGET)]] = names
    doc = DECODE(data[start:cut].decode() + "}")
    if not isinstance(doc, dict) or not isinstance(names, list):
        return None
    doc["candidates"] = names  # one list shared by the docs that logged the same names (read, never changed)
    return doc


def whole_line(line: bytes, path: Path, number: int) -> tuple[int, dict, bytes, dict]:
    """A line parsed whole (the slow path), with the same parts as `fast_line`."""
    try:
        sample = json.loads(line)
    except UnicodeDecodeError:
        raise UserError(f"{path}, line {number}: not an lm-eval sample (not UTF-8 text)") from None
    except json.JSONDecodeError as err:
        raise UserError(f"{path}, line {number}: not an lm-eval sample (not JSON: {err.msg})") from None
    if not isinstance(sample, dict) or not {"doc_id", "doc", "filtered_resps"} <= set(sample):
        raise UserError(f"{path}, line {number}: not an lm-eval sample (no doc_id, doc and filtered_resps)")
    if not isinstance(sample["doc"], dict) or type(sample["doc_id"]) is not int:
        raise UserError(f"{path}, line {number}: not an lm-eval sample (its doc_id is not a number or its doc not an object)")
    skipped = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps"}
    return (
        sample["doc_id"],
        sample["doc"],
        json.dumps(sample["filtered_resps"]).encode(),
        {k: v for k, v in sample.items() if k not in skipped},
    )


# Between two [log-likelihood, is_greedy] pairs of lm-eval's strings, in a line and at the end of one line and the start
# of the next: replaced by line breaks, they leave one number a line, which pyarrow's CSV reader parses in C++
BETWEEN = (b'", "False"], ["', b'", "True"], ["', b'", "False"]][["', b'", "True"]][["')
LAST = (b'", "False"]]', b'", "True"]]')


def log_likelihoods(segments: list[bytes], path: Path) -> tuple[np.ndarray, list[int]]:
    """Every choice's log-likelihood from each doc's filtered_resps text (`[["-26.39", "False"], ...]`: lm-eval's
    strings), and the number of choices of each doc: all lines at once (`fast_values`), else line by line, which names
    a line that is not a list of [log-likelihood, is_greedy] pairs."""
    counts = [segment.count(b'"') // 4 for segment in segments]
    values = fast_values(segments, sum(counts))
    if values is not None:
        return values, counts
    found = []
    for number, segment in enumerate(segments, start=1):
        found += choice_values(segment, path, number)
    return np.array(found, dtype=np.float64), counts


def fast_values(segments: list[bytes], expected: int) -> np.ndarray | None:
    """The numbers of all the segments, when they are all lists of ["<number>", "True"|"False"] pairs; else None."""
    import pyarrow as pa
    from pyarrow import csv

    text = b"".join(segments)
    if not text.startswith(b'[["') or not text.endswith(LAST):
        return None
    for between in BETWEEN:
        text = text.replace(between, b"\n")
    text = text[3 : -len(next(last for last in LAST if text.endswith(last)))]
    if b'"' in text or b"[" in text or b"]" in text:  # anything else than numbers between the pairs' delimiters
        return None
    try:
        table = csv.read_csv(
            pa.BufferReader(text),
            read_options=csv.ReadOptions(column_names=["ll"]),
            parse_options=csv.ParseOptions(quote_char=False),
            convert_options=csv.ConvertOptions(column_types={"ll": pa.float64()}, null_values=[], strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    values = table.column("ll").to_numpy()
    return values if len(values) == expected else None


def choice_values(segment: bytes, path: Path, number: int) -> list[float]:
    """One line's filtered_resps as numbers; UserError naming the line when they are not."""
    try:
        pairs = json.loads(segment)
        values = [float(pair[0]) for pair in pairs]
    except (ValueError, TypeError, IndexError, KeyError):
        values = None
    if values is None or any(math.isnan(value) for value in values):
        raise UserError(
            f"{path}, line {number}: filtered_resps is not a list of [log-likelihood, is_greedy] pairs: not a "
            "multiple-choice task's log"
        )
    return values


# --- the checks every import makes -------------------------------------------------------------------


def check_items(task: LoggedTask, identity: Callable[[dict, int, dict], tuple[str, str]]) -> list[tuple[str, str]]:
    """Each doc's (medprobe id, content digest), recomputed from the doc lm-eval logged by the benchmark's
    `identity(metadata, doc_id, doc)` and equal to the stamp the exported utils.py gave it; a run of every doc also
    holds exactly the items the export recorded. UserError otherwise: the logs are of other data."""
    items = []
    for line, (doc_id, doc) in enumerate(zip(task.doc_ids, task.docs), start=1):
        if "medprobe_item" not in doc or "medprobe_id" not in doc:
            raise UserError(
                f"{task.path}, line {line}: its doc carries no medprobe id and digest: the task was exported by an older "
                "medprobe; export it again (`medprobe export lm-eval`) and rerun lm_eval"
            )
        item, digest = identity(task.metadata, doc_id, doc)
        if (item, digest) != (doc["medprobe_id"], doc["medprobe_item"]):
            raise UserError(
                f"{task.path}, line {line}: doc {doc['medprobe_id']!r} has content digest {digest} ({item}), the export "
                f"recorded {doc['medprobe_item']}: lm-eval logged other data than was exported"
            )
        items.append((item, digest))
    if len(items) != len({item for item, _ in items}):
        raise UserError(f"{task.path}: a doc is logged twice; give the samples of one run")
    if len(items) == task.metadata.get("items"):
        if items_sha256(items) != task.metadata.get("items_sha256"):
            raise UserError(
                f"{task.path}: its {len(items)} docs are not the items {task.name} was exported with (items digest "
                f"{items_sha256(items)[:12]}, exported {str(task.metadata.get('items_sha256'))[:12]}): other data"
            )
    return items


def check_per_doc(task: LoggedTask, metric: str, ours: list[float]) -> None:
    """lm-eval's per-doc value of `metric` is the one the logged log-likelihoods give (a log edited, or scored by
    other code than the export's, is refused)."""
    theirs = task.per_doc.get(metric)
    if theirs is None:
        raise UserError(f"{task.path}: no per-doc {metric}; the task is not the one medprobe exported")
    for line, (value, expected) in enumerate(zip(theirs, ours), start=1):
        if not isinstance(value, (int, float)) or value != expected:
            raise UserError(
                f"{task.path}, line {line}: lm-eval logged {metric} {value!r}, its log-likelihoods give {expected!r}; "
                "the log was changed or scored by other code than the exported utils.py"
            )


def check_reported(where: str, metric: str, theirs: object, ours: float) -> None:
    """A number lm-eval reported (a task's or a group's) is the one medprobe recomputes from the samples."""
    if theirs is None:
        return
    if not isinstance(theirs, (int, float)) or not math.isclose(theirs, ours, rel_tol=1e-9, abs_tol=1e-12):
        raise UserError(
            f"{where}: lm-eval reports {metric} {theirs!r}, its samples give {ours!r}; the results and samples files "
            "are not of one run"
        )
