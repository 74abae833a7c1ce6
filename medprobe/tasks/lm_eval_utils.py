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
"""

from __future__ import annotations

import re

SPACE_BEFORE_PUNCTUATION = re.compile(r"^\s+(?=[.,;:!?])")
MEDLAMA_CUTOFFS = (1, 10)


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


# --- MST: `text` with [MASK], `choices`, `label` ----------------------------------------------------


def mst_text(doc: dict) -> str:
    """The text before the slot, without its trailing white space."""
    return split_at_slot(doc["text"], "[MASK]", doc.get("id"))[0]


def mst_choices(doc: dict) -> list[str]:
    return fill_choices(doc["text"], "[MASK]", doc.get("id"), doc["choices"])


# --- MedLAMA: `query` with [Y], `answers` (one or more gold names), `relation` ---------------------


def medlama_docs(dataset, relation: str):
    """The rows of one relation, each given the relation's candidates: the sorted union of the
    answers of its rows in this split (medprobe's `--candidates relation`)."""
    rows = dataset.filter(lambda row: row["relation"] == relation)
    if rows.num_rows == 0:
        raise ValueError(f"no row of relation {relation!r} in this split")
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
