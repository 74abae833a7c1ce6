"""DisKnE: Disease Knowledge Evaluation, built from the user's MedNLI, MEDIQA-NLI and UMLS files.

Alghanmi, Espinosa-Anke, Schockaert, "Probing Pre-Trained Language Models for Disease
Knowledge", Findings of ACL 2021. Annotation files: github.com/israa-alghanmi/DisKnE.

Each row pairs a MedNLI premise with a disease name (the canonical hypothesis): positives
take the disease span of an entailed MedNLI hypothesis, negatives replace it with a similar
(or random) disease whose name is the SNOMED CT preferred term from UMLS. Four configs, one
per variant: `medical_similar` (default), `medical_random` (rows carry a `category`),
`terminological_similar`, `terminological_random`. One split, `test`: per-disease training
and test sets are derived from these rows (`medprobe.tasks.disknE_splits`).

The text is credentialed (MedNLI and MEDIQA-NLI from PhysioNet, names from the UMLS
Metathesaurus), so nothing is bundled or downloaded for it: `data_dir` must hold the user's
files (any folder depth, found by name). Only the public annotation files are downloaded
from the official repository at a pinned commit, unless they are in `data_dir` too.

This module is the builder (configs, features, the rows, the card's text); the other modules of
this folder hold one concern each:
    annotations.py  the public annotation files: variants, target diseases, reading one file
    sources.py      the user's credentialed files: finding them, reading MedNLI and MEDIQA-NLI
    umls.py         UMLS names: MRCONSO.RRF and TSV readers, the TSV writer, display names
    rows.py         from annotation rows and pairs to dataset rows: spans, synonyms, mentions

Self-contained (the datasets library and the standard library), loaded by path, as a package,
by `medprobe build disknE`; `medprobe umls-names` uses the UMLS readers and writer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import datasets

from .annotations import (
    ANNOTATION_COMMIT,
    ANNOTATION_ROWS,
    ANNOTATION_TREE,
    ANNOTATION_URL,
    CATEGORIES,
    LABELS,
    MEDICAL_TARGETS,
    TERMINOLOGICAL_TARGETS,
    VARIANTS,
    DisknEInputError,
    annotation_cuis,
    annotation_file_name,
    download_annotation_file,
    read_annotation_file,
    variant_targets,
)
from .rows import MentionIndex, check_known_cuis, drop_missing_pairs, positive_spans, synonyms
from .sources import DATA_DIR_LAYOUT, UMLS_URL, local_annotation_files, locate_source_files, read_nli_pairs
from .umls import display_name, read_mrconso, umls_names, write_names_tsv

# What medprobe reads from the builder module: the builder, its features and card text (`medprobe
# build`; the build record names ANNOTATION_COMMIT), and what `medprobe umls-names` uses to extract
# the UMLS names of the annotation files.
__all__ = [
    "ANNOTATION_COMMIT",
    "ANNOTATION_URL",
    "FEATURES",
    "FIELD_DESCRIPTIONS",
    "UMLS_URL",
    "VARIANTS",
    "Diskne",
    "DisknEInputError",
    "annotation_cuis",
    "annotation_file_name",
    "card_context",
    "read_mrconso",
    "write_names_tsv",
]

logger = datasets.utils.logging.get_logger(__name__)

FEATURES = datasets.Features(
    {
        "annotation_row": datasets.Value("int32"),
        "pair_id": datasets.Value("string"),
        "premise": datasets.Value("string"),
        "hypothesis": datasets.Value("string"),
        "full_hypothesis": datasets.Value("string"),
        "label": datasets.ClassLabel(names=list(LABELS)),
        "category": datasets.Value("string"),
        "target_cui": datasets.Value("string"),
        "target_name": datasets.Value("string"),
        "disease_cui": datasets.Value("string"),
        "mentioned_cuis": datasets.List(datasets.Value("string")),
        "in_target_list": datasets.Value("bool"),
        "source": datasets.Value("string"),
        "source_label": datasets.Value("string"),
    }
)

FIELD_DESCRIPTIONS = {
    "annotation_row": "the row of the annotation file (data rows counted from 1): a unique row id",
    "pair_id": "the MedNLI / MEDIQA-NLI pairID the premise comes from (without the `,ng` of negatives)",
    "premise": "MedNLI `sentence1` of the pair",
    "hypothesis": (
        "the canonical hypothesis: the disease name, lower-cased (positive: the span of the MedNLI hypothesis; "
        "negative: the SNOMED CT preferred term of `disease_cui`)"
    ),
    "full_hypothesis": "the MedNLI hypothesis sentence; a negative's has the disease span replaced by the negative name",
    "label": "1 = entailment (the premise supports the disease), 0 = non-entailment",
    "category": (
        "medical variants: symptoms_diseases, treatments_diseases, tests_diseases or procedure_diseases; "
        "empty for terminological ones"
    ),
    "target_cui": "the disease X this row tests (the annotation's `original_cui`); Test_X holds the rows whose target_cui is X",
    "target_name": "SNOMED CT preferred term of `target_cui`, lower-cased",
    "disease_cui": "the disease named by `hypothesis` (the annotation's `CUI`; equals target_cui on positives)",
    "mentioned_cuis": (
        "the diseases of this variant that the premise mentions by a UMLS synonym or a dataset spelling "
        "(whole words, any case): Train_X drops rows that mention X"
    ),
    "in_target_list": "whether `target_cui` is one of the variant's target diseases (the paper's list, see below)",
    "source": "the file of the pair: mednli_train, mednli_dev, mednli_test or mediqa_nli_test",
    "source_label": "the pair's NLI gold label (MEDIQA-NLI: from its ground-truth file)",
}


@dataclass
class DisknEConfig(datasets.BuilderConfig):
    """A DisKnE variant.

    synonym_sources: UMLS sources whose English names count as synonyms when finding the
        diseases a premise mentions ("all" for every source). The paper used SNOMED CT and ICD-10.
    max_missing_pairs: how many annotated pair ids may be absent from the MedNLI / MEDIQA-NLI
        files (their rows are skipped and reported) before the build stops.
    """

    synonym_sources: str = "SNOMEDCT_US,ICD10"
    max_missing_pairs: int = 5


_DESCRIPTION = (
    "DisKnE probes the disease knowledge of pre-trained language models: does a clinical premise "
    "from MedNLI entail a given disease? Negatives swap the disease for a similar or random one; "
    "per-disease training and test sets keep the tested disease out of training."
)

_VARIANT_DESCRIPTIONS = {
    "medical_similar": "medical knowledge (symptoms, treatments, tests, procedures); negatives are the most similar diseases",
    "medical_random": "medical knowledge; negatives are random diseases from the same list",
    "terminological_similar": "terminological knowledge (the premise names the disease differently); similar negatives",
    "terminological_random": "terminological knowledge; random negatives",
}


_VERSION = datasets.Version("1.0.0")


class Diskne(datasets.GeneratorBasedBuilder):
    """DisKnE built from the user's MedNLI, MEDIQA-NLI and UMLS files and the public annotation files."""

    VERSION = _VERSION
    BUILDER_CONFIG_CLASS = DisknEConfig
    BUILDER_CONFIGS = [DisknEConfig(name=v, version=_VERSION, description=_VARIANT_DESCRIPTIONS[v]) for v in VARIANTS]
    DEFAULT_CONFIG_NAME = "medical_similar"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES,
            homepage="https://github.com/israa-alghanmi/DisKnE",
            license="PhysioNet Credentialed Health Data License (MedNLI text) and UMLS Metathesaurus License (names)",
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        sources = locate_source_files(self.config.data_dir)
        annotations = local_annotation_files(self.config.data_dir)
        if self.config.name not in annotations:
            annotations[self.config.name] = download_annotation_file(dl_manager, self.config.name)
        return [
            datasets.SplitGenerator(
                name=datasets.Split.TEST,
                gen_kwargs={
                    "sources": sources,
                    "annotation_path": str(annotations[self.config.name]),
                    "all_annotations": annotations,
                    # where the UMLS names are kept for the other configs of the build (umls.py)
                    "cache_dir": dl_manager.download_config.cache_dir,
                },
            )
        ]

    def _generate_examples(
        self, sources: dict[str, Path], annotation_path: str, all_annotations: dict[str, str], cache_dir: str | None
    ):
        variant = self.config.name
        rows = read_annotation_file(annotation_path, variant)
        pairs = read_nli_pairs(sources)
        rows = drop_missing_pairs(rows, pairs, annotation_path, self.config.max_missing_pairs)
        # Read UMLS once for every annotation file at hand, so the other configs of a build reuse it.
        names = umls_names(sources["umls"], annotation_cuis([str(p) for p in all_annotations.values()]), cache_dir)
        check_known_cuis(rows, names, annotation_path, sources["umls"])
        display = {cui: display_name(found) for cui, found in names.items()}
        fallback = sorted({cui for r in rows for cui in (r.cui, r.original_cui) if not display[cui][1]})
        if fallback:
            logger.warning(
                f"{len(fallback)} CUI(s) have no SNOMED CT preferred term in {sources['umls']}; "
                f"their UMLS preferred name is used: {', '.join(fallback)}"
            )
        positives = positive_spans(rows, pairs, annotation_path)
        mentions = MentionIndex(synonyms(rows, names, display, positives, pairs, self.config.synonym_sources))
        targets = set(variant_targets(variant))
        for r in rows:
            pair = pairs[r.pair_id]
            start, end = positives[(r.pair_id, r.original_cui)]
            disease = pair.hypothesis[start : end + 1].lower() if r.label else display[r.cui][0]
            yield (
                r.row,
                {
                    "annotation_row": r.row,
                    "pair_id": r.pair_id,
                    "premise": pair.premise,
                    "hypothesis": disease,
                    "full_hypothesis": pair.hypothesis
                    if r.label
                    else pair.hypothesis[:start] + disease + pair.hypothesis[end + 1 :],
                    "label": r.label,
                    "category": r.category,
                    "target_cui": r.original_cui,
                    "target_name": display[r.original_cui][0],
                    "disease_cui": r.cui,
                    "mentioned_cuis": mentions.mentioned(pair.premise),
                    "in_target_list": r.original_cui in targets,
                    "source": pair.source,
                    "source_label": pair.gold_label,
                },
            )


# --- card text -------------------------------------------------------------------------------------


def card_context(built: dict[str, datasets.DatasetDict], params: dict | None = None) -> dict[str, str]:
    """Benchmark-specific parts of the dataset card (hub_cards/disknE.md)."""
    sizes = []
    for config, dataset_dict in built.items():
        rows = dataset_dict["test"].num_rows
        skipped = ANNOTATION_ROWS[config] - rows
        note = f" ({skipped:,} skipped: their pairs were not in the MedNLI files)" if skipped > 0 else ""
        sizes.append(f"`{config}`: {rows:,} of the {ANNOTATION_ROWS[config]:,} annotation rows{note}")
    return {
        "annotation_commit": ANNOTATION_COMMIT,
        "annotation_tree": ANNOTATION_TREE,
        "build_sizes": "; ".join(sizes),
        "data_dir_layout": DATA_DIR_LAYOUT,
        "medical_targets_table": targets_table(MEDICAL_TARGETS, built, "medical"),
        "terminological_targets_table": targets_table(TERMINOLOGICAL_TARGETS, built, "terminological"),
    }


def targets_table(targets: tuple[str, ...], built: dict[str, datasets.DatasetDict], family: str) -> str:
    """One line per target disease: name and positive rows (per category for medical variants)."""
    config = next((c for c in built if c.startswith(family)), None)
    names: dict[str, str] = {}
    positives: dict[tuple[str, str | None], int] = defaultdict(int)
    if config:
        ds = built[config]["test"]
        for cui, name, label, category in zip(ds["target_cui"], ds["target_name"], ds["label"], ds["category"]):
            names[cui] = name
            positives[(cui, category)] += label
    columns = list(CATEGORIES) if family == "medical" else [None]
    header = "| CUI | name (from your UMLS) | " + " | ".join(f"positives: {c}" if c else "positive rows" for c in columns) + " |"
    lines = [header, "|" + "---|" * (2 + len(columns))]
    for cui in sorted(targets):
        counts = " | ".join(str(positives[(cui, c)]) if config else "" for c in columns)
        lines.append(f"| {cui} | {names.get(cui, '')} | {counts} |")
    return "\n".join(lines)
