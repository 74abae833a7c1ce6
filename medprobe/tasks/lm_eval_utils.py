"""medprobe tasks for lm-evaluation-harness: how a cloze row becomes a context and its choices.

`medprobe export lm-eval` copies this file as `utils.py` beside the task YAMLs, which name its
functions with `!function utils.<name>` (for MedLAMA it appends one `process_docs` line per
relation). It needs only the standard library, so the exported folder runs where lm-eval is
installed and medprobe is not.

A row holds one slot (`[MASK]` in MST's `text`, `[Y]` in MedLAMA's `query`). A causal LM cannot
fill a slot in the middle of a sentence, so a row is scored as medprobe's causal-lm prober
scores it: the context is the text before the slot, and each choice is the rest of the sentence
with that choice in the slot (`0.33 cm is` + ` larger than 0.834 mm.`). The log-likelihood of a
choice then covers the answer and the words after it, which is what tells a right comparison
from a wrong one. The white space before the slot belongs to the choice (lm-eval moves it there
too), and, as medprobe does by default, the white space between the slot and a punctuation
mark right after it is dropped (`might treat [Y] .` reads `might treat fever.`).

Each doc of the evaluated split is stamped with its medprobe id and content digest (`medprobe_id`,
`medprobe_item`, the ones medprobe's own runs record for the same row) by the task's `process_docs`,
after checking that the split holds exactly the items the export was written for (`EXPORTED`, which
the export appends below): lm-eval stops at once on other data, and `medprobe import lm-eval` pairs
the logged docs with medprobe's runs by id and digest.
"""

from __future__ import annotations

import hashlib
import json
import re

SPACE_BEFORE_PUNCTUATION = re.compile(r"^\s+(?=[.,;:!?])")
MEDLAMA_CUTOFFS = (1, 10)
# medprobe.stats.ITEM_JSON, repeated: this file runs where medprobe is not installed (a test keeps the two equal)
ITEM_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str, separators=(",", ":"))
# lm-eval task -> (the evaluated split, items_sha256 of its rows), written by `medprobe export lm-eval` below
EXPORTED: dict[str, tuple[str, str]] = {}


def split_at_slot(text: str, slot: str, row: object) -> tuple[str, str, str]:
    """(context, the white space before the slot, the text after the slot) of a row's text."""
    if text.count(slot) != 1:
        raise ValueError(f"row {row!r}: expected exactly one {slot} in {text!r}")
    prefix, suffix = text.split(slot)
    context = prefix.rstrip()
    return context, prefix[len(context) :], SPACE_BEFORE_PUNCTUATION.sub("", suffix)


def fill_choices(text: str, slot: str, row: object, choices: list[str]) -> list[str]:
    """Each choice in the slot, with the white space before the slot and the rest of the sentence."""
    _, space, suffix = split_at_slot(text, slot, row)
    return [space + choice + suffix for choice in choices]


# --- the items: medprobe's id and content digest of each doc ---------------------------------------


def item_digest(*parts: object) -> str:
    """medprobe.stats.item_digest: the first 16 hex digits of the sha256 of the parts as compact JSON."""
    return hashlib.sha256(ITEM_JSON.encode(parts).encode("utf-8")).hexdigest()[:16]


def items_sha256(items) -> str:
    """One sha256 over a task's items, `(id, digest)` pairs in any order: what the export recorded of its rows."""
    return hashlib.sha256("".join(f"{item} {digest}\n" for item, digest in sorted(items)).encode("utf-8")).hexdigest()


def mst_identity(config: str, index: int, doc: dict) -> tuple[str, str]:
    """(id, digest) of an MST row as medprobe's MST task records it: `<config>/<row index>`, and the config, text,
    choices and label."""
    return f"{config}/{index}", item_digest(config, doc["text"], doc["choices"], doc["label"])


def medlama_identity(doc: dict) -> tuple[str, str]:
    """(id, digest) of a MedLAMA query as medprobe's MedLAMA task records it: its id, and its relation, query and
    gold answers."""
    return doc["id"], item_digest(doc["relation"], doc["query"], doc["answers"])


def stamp(dataset, task: str, identity):
    """The docs of `task`'s evaluated split with their `medprobe_id` and `medprobe_item`; `identity(index, doc)` gives
    both. Any other split (the few-shot examples) is left as it is. Raises when the split holds other items than the
    export recorded (another build, edited data), before lm-eval scores anything."""
    split, expected = EXPORTED[task]
    if str(getattr(dataset, "split", "")) != split:
        return dataset
    items = [identity(index, doc) for index, doc in enumerate(dataset)]
    found = items_sha256(items)
    if found != expected:
        raise ValueError(
            f"medprobe: task {task} reads other data than it was exported for: its {split} split holds {len(items)} "
            f"rows of items digest {found[:12]}, the export recorded {expected[:12]}; export the tasks again from the "
            "data lm-eval reads (`medprobe export lm-eval`)"
        )
    stamped = dataset.add_column("medprobe_id", [item for item, _ in items])
    return stamped.add_column("medprobe_item", [digest for _, digest in items])


# --- MST: `text` with [MASK], `choices`, `label` ----------------------------------------------------


def mst_text(doc: dict) -> str:
    """The text before the slot, without its trailing white space."""
    return split_at_slot(doc["text"], "[MASK]", doc.get("id"))[0]


def mst_choices(doc: dict) -> list[str]:
    return fill_choices(doc["text"], "[MASK]", doc.get("id"), doc["choices"])


# --- MedLAMA: `query` with [Y], `answers` (one or more gold names), `relation` ---------------------


def mst_docs(dataset, config: str, task: str):
    """The rows of an MST config, stamped (`stamp`)."""
    return stamp(dataset, task, lambda index, doc: mst_identity(config, index, doc))


def medlama_docs(dataset, relation: str, task: str = ""):
    """The rows of one relation, stamped (`stamp`, when `task` is given), each given the relation's candidates: the
    sorted union of the answers of its rows in this split (medprobe's `--candidates relation`)."""
    rows = dataset.filter(lambda row: row["relation"] == relation)
    if rows.num_rows == 0:
        raise ValueError(f"no row of relation {relation!r} in this split")
    if task:
        rows = stamp(rows, task, lambda index, doc: medlama_identity(doc))
    names = sorted({name for answers in rows["answers"] for name in answers})
    return rows.map(lambda row: {"candidates": names})


def medlama_text(doc: dict) -> str:
    return split_at_slot(doc["query"], "[Y]", doc.get("id"))[0]


def medlama_choices(doc: dict) -> list[str]:
    return fill_choices(doc["query"], "[Y]", doc.get("id"), doc["candidates"])


def medlama_target(doc: dict) -> int:
    """The first gold name's candidate index (lm-eval needs one target; only few-shot examples use it)."""
    return doc["candidates"].index(doc["answers"][0])


def medlama_results(doc: dict, results: list) -> dict[str, float]:
    """acc@1 and acc@10 of one query: a hit when any gold name is among the k most likely
    candidates. Equal log-likelihoods keep the candidates' order, as medprobe ranks them."""
    scores = [result[0] for result in results]
    ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
    golds = set(doc["answers"])
    best = next((position for position, i in enumerate(ranked) if doc["candidates"][i] in golds), len(ranked))
    return {f"acc_at_{k}": float(best < k) for k in MEDLAMA_CUTOFFS}
