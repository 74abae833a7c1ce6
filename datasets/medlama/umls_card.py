"""Card text for a build from the user's UMLS release: the statistics such a build records
(UmlsBuildStats, set on the builder that made the config and handed to `card_context`) and how
the card states them: the parameters against the notebook's, every step and its counts.
"""

from __future__ import annotations

import shlex
from collections import Counter
from dataclasses import dataclass

from .config import MedlamaConfig
from .release import RELATIONS, RELEASE_COMMIT
from .umls_inputs import NOTEBOOK_SABS, NOTEBOOK_URL, UMLS_PARAMETERS, UmlsSettings, UmlsSource, umls_settings
from .umls_queries import (
    NAME_HOW,
    STEP_MAX_ANSWERS,
    STEP_NAMED,
    STEP_QUERIES,
    STEP_RELA,
    STEP_SAB,
    STEP_SUPPRESS,
    UmlsExtraction,
)


@dataclass
class UmlsBuildStats:
    """What the card says about a build from a UMLS release."""

    settings: UmlsSettings
    source: UmlsSource
    extraction: UmlsExtraction
    sampled: dict[str, int]
    hard: dict[str, int]
    data_dir: str | None = None


def _setting_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def changed_settings(settings: UmlsSettings) -> dict[str, str]:
    """The parameters that differ from the notebook's defaults, as --set values."""
    defaults = umls_settings(MedlamaConfig(umls_dir=settings.umls_dir))
    return {
        name: _setting_text(getattr(settings, name))
        for name in UMLS_PARAMETERS[1:]
        if getattr(settings, name) != getattr(defaults, name)
    }


def umls_build_command(stats: UmlsBuildStats) -> str:
    """The command for the card; the local folders are named generically, not by their paths."""
    words = ["medprobe", "build", "medlama", "--umls-dir", "UMLS_DIR"]
    if stats.data_dir:
        words += ["--data-dir", "DATA_DIR"]
    for name, value in changed_settings(stats.settings).items():
        words += ["--set", f"{name}={value}"]
    return shlex.join(words).replace("UMLS_DIR", "<META folder>").replace("DATA_DIR", "<data folder>")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def umls_parameters_table(settings: UmlsSettings) -> str:
    notebook = {
        "relations": "the 19 relations of `final_19_relation.txt`",
        "sabs": ", ".join(NOTEBOOK_SABS),
        "per_relation": "1000",
        "seed": "2021 (`random_state`)",
        "max_answers": "10 (`tail_names_len <= 10`)",
        "names": "atom (another fallback: step 5)",
        "drop_suppressed": "false (no SUPPRESS filter)",
        "allow_fewer": "none (pandas stops on a short relation)",
        "synonyms": "none (the release has no subject synonyms; they are in the `variants` config only)",
    }
    rows = []
    for name, reference in notebook.items():
        value = getattr(settings, name)
        shown = f"the {len(value)} relations" if name == "relations" and value == RELATIONS else _setting_text(value)
        rows.append([f"`{name}`", shown, reference])
    return markdown_table(["parameter", "this build", "the notebook"], rows)


def umls_counts_table(stats: UmlsBuildStats) -> str:
    settings, counts = stats.settings, stats.extraction.counts
    header = [
        "relation",
        "MRREL rows (RELA)",
        "in sabs",
        "not suppressed" if settings.drop_suppressed else "suppressed, kept",
        "with English names",
        "queries",
        f"≤ {settings.max_answers} answers",
        "`full`",
        "`hard`",
    ]
    rows, totals = [], Counter()
    for relation in settings.relations:
        step = counts[relation]
        suppression = step[STEP_SUPPRESS] if settings.drop_suppressed else stats.extraction.suppressed_kept[relation]
        values = [
            step[STEP_RELA],
            step[STEP_SAB],
            suppression,
            step[STEP_NAMED],
            step[STEP_QUERIES],
            step[STEP_MAX_ANSWERS],
            stats.sampled[relation],
            stats.hard.get(relation, 0),
        ]
        totals.update(dict(enumerate(values)))
        rows.append([f"`{relation}`"] + [f"{v:,}" for v in values])
    rows.append(["**total**"] + [f"**{totals[i]:,}**" for i in range(len(header) - 1)])
    return markdown_table(header, rows)


def _names_step(settings: UmlsSettings, extraction: UmlsExtraction) -> str:
    if settings.names == "atom":
        unusable = "not in MRCONSO or not English" + (" or suppressed" if settings.drop_suppressed else "")
        text = (
            "Each side is named by the string of the atom the row names (`AUI2` for the head, `AUI1` for the "
            "answer): the source's own English term, so a concept that two sources name differently gives two "
            f"queries, as in the release. When the row names no atom, or its atom is {unusable}, the concept's "
            "English preferred name is used instead. The notebook fell back to whichever string of the concept "
            "came last in MRCONSO, in any language: this is the one deliberate difference from it."
        )
    else:
        text = (
            "Each side is named by its concept's English preferred name (`names=preferred`; the notebook names "
            "each side by the row's atom), so every head concept gives one query."
        )
    counts = "; ".join(
        f"{NAME_HOW[how]}: {n:,}" for how, n in sorted(extraction.name_sources.items(), key=lambda i: list(NAME_HOW).index(i[0]))
    )
    return (
        f"{text} A concept's English preferred name is its `LAT=ENG` MRCONSO row ranked by: not suppressed, "
        "`TS=P`, `STT=PF`, `ISPREF=Y` (the UMLS definition of the preferred name), the first in the file on ties"
        + (", suppressed names left out" if settings.drop_suppressed else "")
        + f". A row whose head or answer has no English name is dropped. Sides of rows named {counts}."
    )


def umls_build_text(stats: UmlsBuildStats) -> str:
    settings, source, extraction = stats.settings, stats.source, stats.extraction
    prompts = "read from the data folder" if stats.data_dir else "downloaded"
    suppression = (
        "MRREL rows whose `SUPPRESS` is not `N` are dropped (`drop_suppressed=true`; the notebook keeps them)."
        if settings.drop_suppressed
        else "MRREL rows are kept whatever their `SUPPRESS` flag, as in the notebook (`drop_suppressed=false`); "
        "the table counts the suppressed rows kept."
    )
    used = ", ".join(f"{sab} {n:,}" for sab, n in _sab_totals(extraction, settings, True)) or "none"
    unused = ", ".join(f"{sab} {n:,}" for sab, n in _sab_totals(extraction, settings, False)) or "none"
    short = [r for r in settings.relations if stats.sampled[r] < settings.per_relation]
    short_note = ""
    if short:
        short_note = (
            "\n\n**Fewer than `per_relation`.** "
            + "; ".join(f"`{r}`: {stats.sampled[r]:,} queries" for r in short)
            + f" (of {settings.per_relation:,} asked): built whole (`allow_fewer=true`), with a warning at build time."
        )
    mrrel, mrconso = extraction.mrrel, extraction.mrconso
    return f"""from a licensed copy of the UMLS Metathesaurus release **{source.version}** (the name {source.version_from} gives): `MRREL.RRF` ({mrrel.lines:,} lines, {mrrel.bytes / 1e6:,.1f} MB) and `MRCONSO.RRF` ({mrconso.lines:,} lines, {mrconso.bytes / 1e6:,.1f} MB) of its META folder, each streamed once. The generation follows the authors' notebook, [`notebooks/data_prep/generate_biomed_lama.ipynb`]({NOTEBOOK_URL}), which made the 2021AA release; the prompts are the release's `prompts.csv` (commit `{RELEASE_COMMIT}`), {prompts}. The same files and parameters give the same Parquet files, byte for byte; another seed draws another sample.

{umls_parameters_table(settings)}

The steps, in order (their counts for this build are in the table below):

1. **Relations.** MRREL rows whose `RELA` is one of the {len(settings.relations)} selected relations.
2. **Sources.** ... and whose `SAB` is one of {", ".join(settings.sabs)}. Rows per source: {used}; rows of these relations in other sources, not used: {unused}.
3. **Suppression.** {suppression}
4. **Direction.** A row `CUI1|AUI1|…|CUI2|AUI2|…|RELA|…` reads "CUI2 RELA CUI1" (in UMLS, `RELA` is the relation of the second concept to the first), as in the notebook: the head [X] is `CUI2`, the answer `CUI1`.
5. **Names.** {_names_step(settings, extraction)}
6. **Queries.** Rows are grouped into one query per (head CUI, head name, relation); `answers` are the answer names de-duplicated in MRREL order and `answer_cuis` the CUI of the last row that gives each name (the notebook's name-to-CUI map: a name that two answer concepts share is one answer).
7. **At most {settings.max_answers} answers.** Queries with more distinct answer names are dropped.
8. **Sample.** Per relation, the queries are sorted by (head CUI, head name) and `per_relation` of them are drawn without replacement by numpy's `RandomState(seed)`, a fresh generator per relation: exactly what pandas' `DataFrame.sample(n, random_state=seed)` did in the notebook. Rows keep the drawn order and `id` (`{{relation}}-{{row}}`) numbers them; this rule reproduces the row order of all 19 files of the 2021AA release.
9. **hard**: the rule below, on the drawn rows.

Not done, as in the notebook: no semantic-type filter (MRSTY.RRF is not read), no language filter on MRREL, no removal of answers equal to the head, no de-duplication of heads across relations.

Counts at every filter:

{umls_counts_table(stats)}{short_note}"""  # noqa: E501 - one markdown paragraph a line, as the card shows it


def _sab_totals(extraction: UmlsExtraction, settings: UmlsSettings, selected: bool) -> list[tuple[str, int]]:
    totals: Counter = Counter()
    for (relation, sab), rows in extraction.rows_by_sab.items():
        if relation in settings.relations and (sab in settings.sabs) == selected:
            totals[sab] += rows
    return sorted(totals.items())
