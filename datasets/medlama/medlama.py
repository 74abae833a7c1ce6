"""MedLAMA: biomedical factual-knowledge probing queries from 19 UMLS 2021AA relations.

Meng, Liu et al., "Rewire-then-Probe: A Contrastive Recipe for Probing Biomedical Knowledge of
Pre-trained Language Models", ACL 2022. Release: github.com/cambridgeltl/medlama.

Configs: `full` (19,000 queries, 1,000 per relation) and `hard` (15,329 queries whose answers
cannot be read off the head name), the paper's protocol; `variants`, each item of `full` asked
another way (the release's other prompt; subject synonyms in a build from a UMLS release), for
consistency over templates and synonyms (variants.py). Split: `test`.

The source is the official release at a pinned commit, fetched through the download manager,
or a `data_dir` with the release layout (`prompts.csv`, `2021AA/{relation}_1000.csv`,
`2021AA/{relation}_{N}_hard.csv`). The `hard` rows are derived from the full rows by the
published rule and checked against the released hard files; any disagreement stops the build.
Each full file must hold exactly 1,000 distinct rows, as the release does, so a duplicated row
or a truncated file stops the build too; for a user's own regenerated data in the release
format, `medprobe build medlama --set rows_per_relation=N` (0: any number) relaxes the count,
and the card states the row check the build applied.

A second source regenerates the benchmark from the user's own UMLS release (`umls_dir`, the
META folder: `medprobe build medlama --umls-dir META`), the way the authors' notebook generated
the 2021AA release.

This module is the builder (its features, and the rows it yields from either source); the other
modules of this folder hold one concern each:
    config.py        the configs and their parameters
    release.py       reading the release files (downloaded or in data_dir) and their checks
    hardness.py      the hard subset: the published rule and its check against the hard files
    umls_inputs.py   the second source's parameters, META folder and release name
    rrf.py           streaming MRREL.RRF and MRCONSO.RRF
    umls_queries.py  from MRREL rows to queries, and the per-relation sample
    card.py          the card text, from the built rows, the parameters and the build's statistics
    umls_card.py     the card text of a build from a UMLS release
    variants.py      the `variants` config: the other template and subject synonyms of each item

The folder is self-contained (the datasets library, numpy and rouge-score only) and is loaded by
path, as a package (medprobe/resources.py): `medprobe build medlama` turns it into a Hub folder
of Parquet files plus a card.
"""

from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import fields

import datasets

from .card import card_context
from .config import PARAMETERS, MedlamaConfig, checked_rows_per_relation
from .hardness import avg_match, avg_rouge_l, check_hard_rows, is_hard
from .release import (
    HARD_SIZES,
    NAME_SEPARATOR,
    RELATIONS,
    RELEASE_COMMIT,
    RELEASE_URL,
    REWIRING_CORPORA,
    download_release,
    local_release_files,
    prompts_file,
    read_default_prompts,
    read_prompts,
    read_relation_rows,
)
from .umls_card import UmlsBuildStats
from .umls_inputs import umls_settings, umls_source
from .umls_queries import extract_queries, sample_relations
from .variants import VARIANT_FEATURES, VARIANT_FIELD_DESCRIPTIONS, VARIANTS, synonym_draw, variant_examples

# What medprobe reads from the builder module: the builder and its features, the card's text
# (`medprobe build`), the pinned release (the build record names RELEASE_COMMIT, the demo RELEASE_URL),
# the relations and the release's rewiring corpora (`--rewire-corpus NAME`). The rest is read from the
# module that holds it (e.g. `medlama.hardness.is_hard`).
__all__ = [
    "FEATURES",
    "FIELD_DESCRIPTIONS",
    "HARD_SIZES",
    "RELATIONS",
    "RELEASE_COMMIT",
    "RELEASE_URL",
    "REWIRING_CORPORA",
    "VARIANTS",
    "VARIANT_FEATURES",
    "VARIANT_FIELD_DESCRIPTIONS",
    "Medlama",
    "MedlamaConfig",
    "card_context",
]

_DESCRIPTION = (
    "MedLAMA probes biomedical factual knowledge with cloze queries built from 19 UMLS 2021AA "
    "relations (SNOMED CT, NCI, MED-RT): `full` has 1,000 queries per relation, `hard` keeps the "
    "queries whose answers share little surface form with the head name."
)

FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "relation": datasets.Value("string"),
        "head_cui": datasets.Value("string"),
        "head_name": datasets.Value("string"),
        "answers": datasets.List(datasets.Value("string")),
        "answer_cuis": datasets.List(datasets.Value("string")),
        "template": datasets.Value("string"),
        "query": datasets.Value("string"),
        "avg_match": datasets.Value("float64"),
        "avg_rouge_l": datasets.Value("float64"),
    }
)

FIELD_DESCRIPTIONS = {
    "id": "`{relation}-{row}`: the row index in the full set (a hard row keeps its full id)",
    "relation": "one of the 19 UMLS relations",
    "head_cui": "UMLS CUI of the head entity [X]",
    "head_name": "name of the head entity [X]",
    "answers": "gold answer names, de-duplicated in source order",
    "answer_cuis": "UMLS CUI of each answer name (same order)",
    "template": "the human prompt with [X] and [Y]",
    "query": "the template with [X] filled; [Y] is left for the prober's own mask token",
    "avg_match": "share of gold names found in the head name (the hardness rule, see below)",
    "avg_rouge_l": "mean ROUGE-L F between head name and gold names (the hardness rule)",
}


class Medlama(datasets.GeneratorBasedBuilder):
    """MedLAMA built from the official release files, or regenerated from the user's UMLS release.

    After generating a config from a UMLS release, `card_statistics` holds what the card states
    about that build (a UmlsBuildStats); it is None for the release files.
    """

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = MedlamaConfig
    BUILDER_CONFIGS = [
        MedlamaConfig(name="full", version=VERSION, description="All queries (19,000 in the release: 1,000 per relation)."),
        MedlamaConfig(
            name="hard", version=VERSION, description="The queries with avg_match and ROUGE-L below 0.1 (15,329 in the release)."
        ),
        MedlamaConfig(
            name=VARIANTS,
            version=VERSION,
            description="Each item of full asked another way, one row per (item, variant): the release's default prompt, "
            "then subject synonyms (from a UMLS release only); for consistency, not a benchmark of its own.",
        ),
    ]
    DEFAULT_CONFIG_NAME = "full"

    def __init__(self, *args, **kwargs):
        # datasets' own message for a misspelt parameter prints the whole config; name it instead
        known = {f.name for f in fields(MedlamaConfig)} | set(inspect.signature(datasets.DatasetBuilder.__init__).parameters)
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(f"medlama: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(PARAMETERS)}")
        if "rows_per_relation" in kwargs:
            kwargs["rows_per_relation"] = checked_rows_per_relation(kwargs["rows_per_relation"])
        super().__init__(*args, **kwargs)
        self.umls = umls_settings(self.config)  # None for the release source; fails before any work
        self.card_statistics: UmlsBuildStats | None = None

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=VARIANT_FEATURES if self.config.name == VARIANTS else FEATURES,
            homepage="https://github.com/cambridgeltl/medlama",
            license="UMLS Metathesaurus License (UMLS-derived; see the dataset card)",
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        self.card_statistics = None  # the card must not describe an earlier build
        if self.umls is not None:
            files = {
                "umls": umls_source(self.umls),
                "prompts": prompts_file(self.config.data_dir, dl_manager),
                # where the extraction is kept for the other config of the build (umls_queries.py)
                "cache_dir": dl_manager.download_config.cache_dir,
            }
            return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"files": files})]
        want_hard = self.config.name == "hard"
        if self.config.data_dir:
            files = local_release_files(self.config.data_dir, want_hard)
        else:
            files = download_release(dl_manager, want_hard)
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"files": files})]

    def _generate_examples(self, files: dict):
        if "umls" in files:  # the second source: the user's own UMLS release
            yield from self._generate_umls_examples(files)
            return
        prompts = read_prompts(files["prompts"])
        if self.config.name == VARIANTS:
            yield from self._generate_release_variants(files, prompts)
            return
        for relation in RELATIONS:
            rows = read_relation_rows(files["full"][relation], relation, self.config.rows_per_relation)
            for row in rows:
                raw = row["raw"]
                row["avg_match"] = avg_match(raw["head_name"], raw["tail_names"])
                row["avg_rouge_l"] = avg_rouge_l(raw["head_name"], raw["tail_names"])
                row["hard"] = is_hard(row["avg_match"], row["avg_rouge_l"])
            if self.config.name == "hard":
                check_hard_rows(relation, files["full"][relation], files["hard"][relation], rows)
            template = prompts[relation]
            for index, row in enumerate(rows):
                if self.config.name == "hard" and not row["hard"]:
                    continue
                raw = row["raw"]
                example_id = f"{relation}-{index:04d}"
                yield (
                    example_id,
                    {
                        "id": example_id,
                        "relation": relation,
                        "head_cui": raw["head_cui"],
                        "head_name": raw["head_name"],
                        "answers": row["answers"],
                        "answer_cuis": row["answer_cuis"],
                        "template": template,
                        "query": template.replace("[X]", raw["head_name"]),
                        "avg_match": row["avg_match"],
                        "avg_rouge_l": row["avg_rouge_l"],
                    },
                )

    def _generate_release_variants(self, files: dict, prompts: dict[str, str]):
        """The `variants` rows of every full row: the default prompt only (the release files hold no synonyms)."""
        defaults = read_default_prompts(files["prompts"])
        for relation in RELATIONS:
            rows = read_relation_rows(files["full"][relation], relation, self.config.rows_per_relation)
            for index, row in enumerate(rows):
                raw = row["raw"]
                item = {
                    "relation": relation,
                    "head_cui": raw["head_cui"],
                    "head_name": raw["head_name"],
                    "answers": row["answers"],
                    "answer_cuis": row["answer_cuis"],
                }
                yield from variant_examples(f"{relation}-{index:04d}", item, prompts[relation], defaults[relation])

    def _generate_umls_examples(self, files: dict):
        settings, source = self.umls, files["umls"]
        prompts = read_prompts(files["prompts"])
        defaults = read_default_prompts(files["prompts"]) if self.config.name == VARIANTS else {}
        extraction = extract_queries(source, settings, files["cache_dir"])
        sampled = sample_relations(extraction, settings)
        hard_counts: Counter = Counter()
        for relation in settings.relations:
            template = prompts[relation]
            for index, query in enumerate(sampled[relation]):
                tail_names = NAME_SEPARATOR.join(query.answers)
                match, rouge_l = avg_match(query.head_name, tail_names), avg_rouge_l(query.head_name, tail_names)
                hard = is_hard(match, rouge_l)
                hard_counts[relation] += hard
                example_id = f"{relation}-{index:04d}"
                if self.config.name == VARIANTS:
                    names = extraction.head_names.get(query.head_cui, ())
                    synonyms = synonym_draw(names, query.head_cui, query.head_name, settings.synonyms, settings.seed)
                    item = {
                        "relation": relation,
                        "head_cui": query.head_cui,
                        "head_name": query.head_name,
                        "answers": query.answers,
                        "answer_cuis": query.answer_cuis,
                    }
                    yield from variant_examples(example_id, item, template, defaults[relation], synonyms)
                    continue
                if self.config.name == "hard" and not hard:
                    continue
                yield (
                    example_id,
                    {
                        "id": example_id,
                        "relation": relation,
                        "head_cui": query.head_cui,
                        "head_name": query.head_name,
                        "answers": list(query.answers),
                        "answer_cuis": list(query.answer_cuis),
                        "template": template,
                        "query": template.replace("[X]", query.head_name),
                        "avg_match": match,
                        "avg_rouge_l": rouge_l,
                    },
                )
        sampled_counts = {relation: len(rows) for relation, rows in sampled.items()}
        self.card_statistics = UmlsBuildStats(
            settings, source, extraction, sampled_counts, dict(hard_counts), data_dir=self.config.data_dir
        )
