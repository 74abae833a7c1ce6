"""Card text (hub_cards/medlama.md) from the built data, the build's parameters and the statistics
the builders recorded.

Everything the card states is computed here from what `card_context` is given: the relation and
answer-space tables from the built rows; the text that depends on the source from the build's
`--set` values and, for a build from the user's UMLS release, from the statistics of that build
(umls_card.py). Nothing is read from an earlier build.
"""

from __future__ import annotations

from collections import Counter

import datasets

from .release import FULL_SIZE, RELATIONS, RELEASE_COMMIT, RELEASE_TREE
from .umls_card import UmlsBuildStats, umls_build_command, umls_build_text
from .variants import SYNONYM_VARIANT, TEMPLATE_VARIANT, VARIANT_FIELD_DESCRIPTIONS, VARIANTS


def card_context(
    built: dict[str, datasets.DatasetDict], params: dict | None = None, statistics: dict[str, UmlsBuildStats | None] | None = None
) -> dict[str, str]:
    """Benchmark-specific parts of the dataset card (hub_cards/medlama.md).

    `params` are the build's `--set` values; `statistics` what the builder of each config built now
    recorded (`Medlama.card_statistics`: a UmlsBuildStats for a build from a UMLS release, None for
    the release files; configs kept from an earlier build have none).
    """
    queries = {name: ds for name, ds in built.items() if name != VARIANTS}  # the configs of queries; variants aside
    counts = {name: Counter(ds["test"]["relation"]) for name, ds in queries.items()}
    prompts, defaults = {}, {}
    for ds in queries.values():
        for relation, template in zip(ds["test"]["relation"], ds["test"]["template"]):
            prompts.setdefault(relation, template)
    if VARIANTS in built:
        rows = built[VARIANTS]["test"]
        for relation, variant, template in zip(rows["relation"], rows["variant"], rows["template"]):
            if variant == TEMPLATE_VARIANT:
                defaults.setdefault(relation, template)
    header = "| relation | prompt |" + (" default prompt (`variants`) |" if VARIANTS in built else "")
    header += "".join(f" {c} queries |" for c in counts)
    lines = [header, "|" + "---|" * (2 + (VARIANTS in built) + len(counts))]
    for relation in RELATIONS:
        sizes = "".join(f" {counts[c].get(relation, 0):,} |" for c in counts)
        default = f" {defaults.get(relation, 'the same text: no template variant')} |" if VARIANTS in built else ""
        lines.append(f"| `{relation}` | {prompts.get(relation, '')} |{default}{sizes}")
    answer_space = []
    for name, ds in queries.items():
        names = set(ds["test"]["head_name"])
        for answers in ds["test"]["answers"]:
            names.update(answers)
        answer_space.append(f"`{name}`: {len(names):,} names")
    return {
        "relations_table": "\n".join(lines),
        "answer_space_sizes": "; ".join(answer_space) or "no config of queries in this build",
        "variants_text": variants_text(built, params),
        "release_commit": RELEASE_COMMIT,
        "release_tree": RELEASE_TREE,
        **source_context(built, params or {}, statistics or {}),
    }


def release_build_text(row_check: str) -> str:
    """How a build from the release files was made, for the card."""
    return f"""from the
official release files at commit `{RELEASE_COMMIT}` ({RELEASE_TREE}):
`prompts.csv` and, per relation, `2021AA/{{relation}}_1000.csv` and `2021AA/{{relation}}_{{N}}_hard.csv`.

- Row check: {row_check} Every row of a relation file must be distinct (same values in all
  release columns = a duplicate); a hard file may not repeat a row either.
- `answers` are the release's de-duplicated gold names in their original order, with the CUI of
  each in `answer_cuis`. Every name keeps its UTF-8 spelling (the released probing code read the
  names as latin-1, which made 8 queries unanswerable; this dataset does not).
- `id` is `{{relation}}-{{row}}` with the row index in the full release file, so a hard row has the
  same id as its full row.
- To regenerate the benchmark from your own, newer UMLS release instead, see
  `medprobe build medlama --umls-dir META` (the MedLAMA paragraph of the medprobe README)."""


_RELEASE_HARD_NOTE = """The build checks the rule against the released hard files and stops
if a single row differs: the rule selects the released hard rows exactly (15,329 of 19,000 on this
release). The recomputed `avg_rouge_l` equals the released column on all but a few dozen rows,
where the authors' summary-level ROUGE-L treats repeated words differently; on those rows too the
rule decides as the release did."""


def source_context(
    built: dict[str, datasets.DatasetDict], params: dict, statistics: dict[str, UmlsBuildStats | None]
) -> dict[str, str]:
    """The card text that depends on the source: the release files or the user's UMLS release."""
    stats = next((statistics[c] for c in built if statistics.get(c) is not None), None)
    if stats is None and params.get("umls_dir"):
        # the card would describe the release files: refuse rather than misstate where the rows come from
        raise ValueError("medlama: a build from a UMLS release (umls_dir) must hand its statistics to card_context")
    common = {"answers_summary": answers_summary(built)}
    if stats is None:
        return {
            **common,
            "umls_version": "2021AA",
            "sources": "SNOMED CT, NCI, MED-RT",
            "relation_count": str(len(RELATIONS)),
            "source_note": "",
            "how_it_was_built": release_build_text(row_check_note(params.get("rows_per_relation", FULL_SIZE))),
            "hard_rule_note": _RELEASE_HARD_NOTE,
        }
    settings, version = stats.settings, stats.source.version
    return {
        **common,
        "umls_version": version,
        "sources": ", ".join(settings.sabs),
        "relation_count": str(len(settings.relations)),
        "source_note": (
            f"; this copy was regenerated from the UMLS {version} release by the authors' generation "
            "procedure (see How it was built), not copied from their 2021AA files"
        ),
        "how_it_was_built": umls_build_text(stats),
        "hard_rule_note": "The notebook derived its hard files the same way, from the same drawn rows.",
        "build_command": umls_build_command(stats),
    }


def answers_summary(built: dict[str, datasets.DatasetDict]) -> str:
    config = "full" if "full" in built else next(iter(built), None)
    if config is None:
        return "no gold answers (this build is empty)"
    sizes = [len(answers) for answers in built[config]["test"]["answers"]]
    if not sizes:
        return "no gold answers (this build is empty)"
    return f"up to {max(sizes)} gold answers ({sum(sizes) / len(sizes):.1f} on average in `{config}`)"


def row_check_note(rows_per_relation: int | None) -> str:
    """The row-count rule a build applied, in words for the card."""
    if rows_per_relation == FULL_SIZE:
        return (
            f"every full release file held exactly {FULL_SIZE:,} distinct rows, the release's size "
            f"(a duplicated row or a truncated file stops the build)."
        )
    if not rows_per_relation:
        count = "any number of distinct rows"
    else:
        count = f"exactly {rows_per_relation:,} distinct rows"
    return (
        f"relaxed with `rows_per_relation={rows_per_relation or 0}`: every full file held {count}, "
        f"not the release's {FULL_SIZE:,}, so this is not the official MedLAMA release but data "
        f"in its format."
    )


def variants_text(built: dict[str, datasets.DatasetDict], params: dict) -> str:
    """The card's section on the `variants` config: what it holds in this build, its fields and its counts."""
    synonyms_note = (
        "The official release files carry **no subject synonyms**: this build, made from them, has none. A build "
        "from a UMLS release (`medprobe build medlama --umls-dir META`) adds up to `--synonyms N` (default 3) per item."
        if not params.get("umls_dir")
        else "Synonyms come from this build's UMLS release (`MRCONSO.RRF`)."
    )
    if VARIANTS not in built:
        return f"This build has no `{VARIANTS}` config (`medprobe build medlama --config {VARIANTS}` adds it). {synonyms_note}"
    rows = built[VARIANTS]["test"]
    kinds = Counter(variant if variant == TEMPLATE_VARIANT else "synonym" for variant in rows["variant"])
    items = len(set(rows["id"]))
    synonym_items = len({i for i, v in zip(rows["id"], rows["variant"]) if v != TEMPLATE_VARIANT})
    most = max((int(v.rsplit("_", 1)[1]) for v in rows["variant"] if v != TEMPLATE_VARIANT), default=0)
    order = ", ".join([f"`{TEMPLATE_VARIANT}`"] + [f"`{SYNONYM_VARIANT.format(i)}`" for i in range(1, most + 1)])
    lines = ["| field | description |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in VARIANT_FIELD_DESCRIPTIONS.items()]
    fields = "\n".join(lines)
    of_full = f" (of the {built['full']['test'].num_rows:,} of `full`)" if "full" in built else ""
    return f"""`{VARIANTS}` asks each item of `full` (hence of `hard`: a hard row keeps its full id) another way, one row
per (item, variant), so that a prober's consistency can be measured: in this build {rows.num_rows:,} rows for
{items:,} items{of_full}, {kinds[TEMPLATE_VARIANT]:,} with the release's default prompt and {kinds["synonym"]:,} with a
subject synonym ({synonym_items:,} items have at least one). The order of an item's variants is fixed: {order}.

- `{TEMPLATE_VARIANT}`: the release's other template (`prompts.csv`, column `default_prompt`) with the head name,
  its white space normalised (runs of spaces made one, ends stripped: the release writes
  "[X] associated morphology of  [Y] ." with two spaces). Where it is then the same text as the human prompt
  (`occurs_after` in the release) the item has no template variant.
- `synonym_i`: the human prompt with [X] filled by another English name of the head concept: `LAT=ENG`,
  `SUPPRESS=N`, not the head name or another synonym after case folding, up to N drawn without replacement by a
  generator seeded with the build's seed and the head's CUI and name. {synonyms_note}

`full` and `hard` are unchanged by it (same rows, queries and bytes: the paper's protocol). A row holds its query
and gold answers, so any prober can rank it alone; `medprobe probe ... --variants templates|synonyms|all` ranks
them with the same prober over the same candidates and reports consistency and robust acc@k.

{fields}"""
