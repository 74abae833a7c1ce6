"""The `variants` config: each item's query asked another way, for consistency over templates and synonyms.

`full` and `hard` stay the paper's protocol (the human prompt, the head's own name), byte for byte. The
`variants` config holds, for every item of `full` (so for every item of `hard` too: a hard row keeps its
full id), the same question asked differently, one row per (item, variant), in a fixed order:

1. `default_prompt`: the release's other template (prompts.csv `default_prompt`, e.g. "[X] may treat [Y] .")
   with the head name. Its white space is normalised (runs of spaces to one, ends stripped: the release's
   "[X] associated morphology of  [Y] ." has two spaces). A relation whose default prompt is then the same
   text as its human prompt (occurs_after) has no template variant: asking the same query twice is no variant.
2. `synonym_1` .. `synonym_N`: the human prompt with [X] filled by another English name of the head concept,
   from MRCONSO (builds from a UMLS release only: the release CSVs carry no synonyms). The names of the head
   CUI that are English (`LAT=ENG`), not suppressed (`SUPPRESS=N`) and differ from the head name and from each
   other after case folding; up to N of them (`--synonyms N`, default 3) drawn without replacement by a
   generator seeded with the build's seed and the item's head CUI and name (`synonym_draw`): the same files and
   seed give the same synonyms, an item gets the same ones in every config and relation, and with a larger N
   the first ones stay (a permutation's head).

A row carries what a prober needs to ask and score it alone (`query`, `answers`) and what pairs it with its
item (`id`, `relation`, `head_cui`, `head_name`); `subject` is the name the query asks about.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

import datasets
import numpy as np

VARIANTS = "variants"  # the config's name
TEMPLATE_VARIANT = "default_prompt"
SYNONYM_VARIANT = "synonym_{}"  # synonym_1, synonym_2, ... in draw order

VARIANT_FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "variant": datasets.Value("string"),
        "relation": datasets.Value("string"),
        "head_cui": datasets.Value("string"),
        "head_name": datasets.Value("string"),
        "subject": datasets.Value("string"),
        "answers": datasets.List(datasets.Value("string")),
        "answer_cuis": datasets.List(datasets.Value("string")),
        "template": datasets.Value("string"),
        "query": datasets.Value("string"),
    }
)

VARIANT_FIELD_DESCRIPTIONS = {
    "id": "the item's id in `full` (and in `hard`, where it is a hard item): one row per variant of the item",
    "variant": "`default_prompt` (the release's other template), or `synonym_1` .. `synonym_N` (another name of the head)",
    "relation": "the item's relation",
    "head_cui": "the item's head CUI",
    "head_name": "the item's head name (as in `full`)",
    "subject": "the name that fills [X] in this variant's query: the head name, or a synonym of it",
    "answers": "the item's gold answer names (as in `full`)",
    "answer_cuis": "the item's answer CUIs (as in `full`)",
    "template": "this variant's template with [X] and [Y]: the default prompt, or the human prompt for a synonym",
    "query": "the template with [X] filled by `subject`; [Y] is left for the prober's own mask token",
}


def normalised_template(template: str) -> str:
    """A template with every run of white space made one space and its ends stripped."""
    return " ".join(template.split())


def variant_examples(
    item_id: str,
    item: dict,
    human_template: str,
    default_template: str,
    synonyms: Sequence[str] = (),
) -> Iterator[tuple[str, dict]]:
    """The (key, row) of each variant of one item, in the fixed order: the default prompt (when it is another
    text than the human prompt), then the synonyms with the human prompt. `item` holds relation, head_cui,
    head_name, answers and answer_cuis as the item's row in `full`."""
    asked = [(TEMPLATE_VARIANT, default_template, item["head_name"])] if default_template != human_template else []
    asked += [(SYNONYM_VARIANT.format(i), human_template, name) for i, name in enumerate(synonyms, start=1)]
    for variant, template, subject in asked:
        yield (
            f"{item_id}/{variant}",
            {
                "id": item_id,
                "variant": variant,
                "relation": item["relation"],
                "head_cui": item["head_cui"],
                "head_name": item["head_name"],
                "subject": subject,
                "answers": list(item["answers"]),
                "answer_cuis": list(item["answer_cuis"]),
                "template": template,
                "query": template.replace("[X]", subject),
            },
        )


def synonym_draw(names: Sequence[str], head_cui: str, head_name: str, wanted: int, seed: int) -> list[str]:
    """Up to `wanted` names of the head concept other than `head_name` (case folded), drawn without replacement.

    `names` are the concept's English names that are not suppressed (rrf.read_concept_names); names equal after
    case folding are one name, spelt the least way in code points. They are sorted first, so that the draw
    depends on the names and not on their order in MRCONSO; the generator is seeded with the build's seed and the head (CUI and name), so an item's
    synonyms do not depend on which other items were drawn, and the first `wanted` of a permutation are kept,
    so a larger `wanted` keeps the smaller draw as its head.
    """
    own, spellings = head_name.casefold(), {}
    for name in names:
        if name.casefold() != own:
            spellings[name.casefold()] = min(spellings.get(name.casefold(), name), name)
    pool = sorted(spellings.values(), key=lambda name: (name.casefold(), name))
    if not pool or wanted <= 0:
        return []
    key = hashlib.sha256(f"{seed}\t{head_cui}\t{head_name}".encode()).digest()
    order = np.random.default_rng(int.from_bytes(key[:8], "big")).permutation(len(pool))
    return [pool[i] for i in order[:wanted].tolist()]
