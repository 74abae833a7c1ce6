"""Context-variance prompts: cloze queries preceded by growing pieces of a real document.

Yao, Cao, Yang, Yu, "Context Variance Evaluation of Pretrained Language Models for Prompt-based
Biomedical Knowledge Probing", AMIA 2023 Joint Summits. Triples in BioLAMA's JSONL form (Sung et
al., EMNLP 2021).

For a triple (S, r, O_t) and a document that mentions both S and O_t, the document is cut
around the first mention of O_t into segments S1, S2, ... such that S1 holds O_t and every
other segment holds exactly one entity of the pool (the entities of O_t's type). Segments grow
outward, alternately left and right, starting on the left, and continue on one side once the
other has no pool entity left. Row `step = i` of an instance is the prompt preceded by the
context S1..Si (step 0: the prompt alone), so the rank change of any object between step i-1
and step i is the effect of adding segment Si.

Configs are `<context kind>-<target kind>`:
- context kinds: `real` (the document text of S1..Si), `knowledge_only` (only the entity
  mentions of S1..Si, in document order), `knowledge_sorted` (the mentions in segment order
  S1, S2, ...), `knowledge_random` (S1 first, the others in a seeded random order);
- target kinds: `target` (centred on O_t) and `negative` (centred on the incorrect pool
  entity nearest to O_t in the document).

Input: `data_dir` with `triples.jsonl` (BioLAMA rows), `prompts.jsonl` (`{"relation",
"template"}` with [X] and [Y]), optional `entities.jsonl` (`{"label", "type", "aliases"}`: more
pool entities) and `corpus/` (`*.txt`, one document per file, and/or `*.jsonl` with `{"id",
"text"}` per line). Other locations are builder parameters (`triples`, `prompts`, `entities`,
`corpus`: paths or globs relative to data_dir). Without data_dir the small corpus written for
medprobe (`sample/` beside this file) is used.

This module is the builder (configs, features, where the inputs are, the card's text); the other
modules of this folder hold one concern each:
    inputs.py        reading and checking the triples, prompts, entities and corpus; the entity pools
    segmentation.py  the paper's construction: entity matching, segments, the context of a step
    instances.py     the rows of each instance, and the statistics of what a build read and skipped

Self-contained (datasets and the standard library); loaded by path, as a package, by `medprobe build`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import datasets

from .inputs import ContextVarianceInputError, build_pools, read_corpus, read_entities, read_prompts, read_triples, resolve_inputs
from .instances import BuildStats, examples, generate_rows
from .segmentation import CONTEXT_KINDS

# What medprobe reads from the builder module: the builder and its features, the card's text, and
# SAMPLE_DIR (`medprobe build` records a build without data_dir as made from the shipped sample).
__all__ = ["CONTEXT_KINDS", "FEATURES", "FIELD_DESCRIPTIONS", "SAMPLE_DIR", "ContextVariance", "card_context"]

logger = datasets.logging.get_logger(__name__)

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
TARGET_KINDS = ("target", "negative")
LICENCES = ("credentialed", "umls", "open")  # see medprobe/building/cards.py: how a build may be published

FEATURES = datasets.Features(
    {
        "row_id": datasets.Value("string"),
        "instance_id": datasets.Value("string"),
        "triple_id": datasets.Value("string"),
        "relation": datasets.Value("string"),
        "subject": datasets.Value("string"),
        "target": datasets.Value("string"),
        "document_id": datasets.Value("string"),
        "context_kind": datasets.Value("string"),
        "target_kind": datasets.Value("string"),
        "step": datasets.Value("int32"),
        "num_steps": datasets.Value("int32"),
        "text": datasets.Value("string"),
        "prompt": datasets.Value("string"),
        "segment": datasets.Value("string"),
        "added_object": datasets.Value("string"),
        "added_is_correct": datasets.Value("bool"),
        "correct_objects": datasets.List(datasets.Value("string")),
        "incorrect_objects": datasets.List(datasets.Value("string")),
        "gold_objects": datasets.List(datasets.Value("string")),
        "candidates": datasets.List(datasets.Value("string")),
    }
)

FIELD_DESCRIPTIONS = {
    "row_id": "`{instance_id}/{step}`",
    "instance_id": "`{triple_id}\\|{target}\\|{document_id}`: one segmentation of one document; its rows are steps 0..num_steps",
    "triple_id": "the BioLAMA `uuid` of the triple (subject and relation)",
    "relation": "the BioLAMA `predicate_id`",
    "subject": "the subject label [X]",
    "target": "the object whose mention S1 holds: O_t for `target` configs, the nearest incorrect pool entity for `negative` configs",
    "document_id": "the document the context comes from (file name or JSONL `id`)",
    "context_kind": "real, knowledge_only, knowledge_sorted or knowledge_random",
    "target_kind": "target or negative",
    "step": "i: the context holds segments S1..Si (0 = the prompt alone); the rank change of step i compares with step i-1 of the same instance",
    "num_steps": "n, the number of segments of the instance",
    "text": "the context followed by the prompt, with [MASK] in the answer slot",
    "prompt": "the manual prompt with [X] filled and [MASK] in the answer slot",
    "segment": "the document text of Si, the segment added at this step (white space collapsed; empty at step 0)",
    "added_object": "the pool entity that Si holds (its label; empty at step 0)",
    "added_is_correct": "whether the added object satisfies (subject, relation, ·), i.e. is in O_cor",
    "correct_objects": "correct pool entities (O_cor) mentioned in S1..Si, other than `target`, in the order they were added",
    "incorrect_objects": "incorrect pool entities (O_incor) mentioned in S1..Si, other than `target`, in the order they were added",
    "gold_objects": "all objects of the triple (its obj_labels)",
    "candidates": "the entity pool of the target's type (labels, sorted): the names a prober ranks at [MASK]",
}


# --- the builder ----------------------------------------------------------------------------------------


@dataclass
class ContextVarianceConfig(datasets.BuilderConfig):
    """`<context kind>-<target kind>`, plus where the inputs are and the seed of knowledge_random."""

    context_kind: str = "real"
    target_kind: str = "target"
    seed: int = 0
    max_steps: int | None = None  # keep at most this many segments per instance (None: all)
    triples: str = "triples.jsonl"  # path or glob, relative to data_dir
    prompts: str = "prompts.jsonl"
    entities: str | None = None  # default: entities.jsonl when it exists
    corpus: str = "corpus"  # a folder of *.txt / *.jsonl, or one *.jsonl file
    # How a build from a user's data may be published (the card's medprobe_licence marker):
    # "credentialed" (default: e.g. MIMIC notes, private only), "umls" (UMLS-derived triples, gated)
    # or "open" (openly licensed corpus and triples). The shipped sample is always "open".
    licence: str = "credentialed"


def _config(context_kind: str, target_kind: str) -> ContextVarianceConfig:
    what = {
        "real": "the document text of S1..Si",
        "knowledge_only": "only the entity mentions of S1..Si, in document order",
        "knowledge_sorted": "the entity mentions in segment order S1, S2, ...",
        "knowledge_random": "S1's entity first, the other mentions in a seeded random order",
    }[context_kind]
    centre = "O_t" if target_kind == "target" else "the incorrect pool entity nearest to O_t"
    return ContextVarianceConfig(
        name=f"{context_kind}-{target_kind}",
        version=datasets.Version("1.0.0"),
        description=f"Context: {what}; S1 holds {centre}.",
        context_kind=context_kind,
        target_kind=target_kind,
    )


class ContextVariance(datasets.GeneratorBasedBuilder):
    """Context-variance prompts built from BioLAMA-style triples and a corpus of documents.

    After generating a config, `card_statistics` holds what it read, built and skipped (a BuildStats).
    """

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = ContextVarianceConfig
    BUILDER_CONFIGS = [_config(c, t) for t in TARGET_KINDS for c in CONTEXT_KINDS]
    DEFAULT_CONFIG_NAME = "real-target"
    card_statistics: BuildStats | None = None

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=__doc__.split("\n\n")[0],
            features=FEATURES,
            homepage="https://github.com/dmis-lab/BioLAMA",
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        self.card_statistics = None  # the card must not describe an earlier build
        config = self.config
        if config.context_kind not in CONTEXT_KINDS or config.target_kind not in TARGET_KINDS:
            raise ValueError(f"unknown context/target kind {config.context_kind!r}/{config.target_kind!r}")
        root = Path(config.data_dir) if config.data_dir else SAMPLE_DIR
        files = {"triples": resolve_inputs(root, config.triples, "triples")}
        files["prompts"] = resolve_inputs(root, config.prompts, "prompts")[0]
        files["corpus"] = resolve_inputs(root, config.corpus, "corpus")[0]
        entities = config.entities or "entities.jsonl"
        files["entities"] = (
            resolve_inputs(root, entities, "entities")[0] if config.entities or (root / entities).exists() else None
        )
        files["source"] = "the sample corpus shipped with medprobe" if not config.data_dir else "a user data folder"
        if config.licence not in LICENCES:
            raise ValueError(f"licence must be one of {', '.join(LICENCES)} (--set licence=...), got {config.licence!r}")
        files["licence"] = config.licence if config.data_dir else "open"
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"files": files})]

    def _generate_examples(self, files: dict):
        triples = read_triples(files["triples"])
        pools = build_pools(triples, read_entities(files["entities"]) if files["entities"] else [])
        stats = BuildStats(source=files["source"], licence=files["licence"])
        rows = generate_rows(
            triples,
            read_prompts(files["prompts"]),
            pools,
            read_corpus(files["corpus"]),
            self.config.context_kind,
            self.config.target_kind,
            self.config.seed,
            self.config.max_steps,
            stats,
        )
        for row in rows:
            yield row["row_id"], row
        self.card_statistics = stats
        logger.warning(stats.summary(self.config.name))
        if stats.unmatchable_names:
            logger.warning(
                f"{len(stats.unmatchable_names)} names cannot be matched as whole words and were ignored: {stats.unmatchable_names[:10]}"
            )
        if stats.rows == 0:
            raise ContextVarianceInputError(f"nothing to build: {stats.summary(self.config.name)}")


# --- card text ---------------------------------------------------------------------------------------


def card_context(
    built: dict[str, datasets.DatasetDict], params: dict | None = None, statistics: dict[str, BuildStats | None] | None = None
) -> dict[str, str]:
    """Benchmark-specific parts of the dataset card (hub_cards/context_variance.md).

    `statistics`: what the builder of each config built now recorded (`ContextVariance.card_statistics`);
    configs kept from an earlier build have none.
    """
    statistics = statistics or {}
    lines = ["| config | instances | rows | steps per instance (mean) | relations |", "|---|---|---|---|---|"]
    for name, dataset_dict in built.items():
        ds = dataset_dict["test"]
        instances = Counter(ds["instance_id"])
        relations = ", ".join(f"`{r}` {n}" for r, n in sorted(Counter(ds["relation"]).items()))
        mean_steps = (ds.num_rows / len(instances) - 1) if instances else 0.0
        lines.append(f"| `{name}` | {len(instances):,} | {ds.num_rows:,} | {mean_steps:.1f} | {relations} |")
    stats = next((statistics[c] for c in built if statistics.get(c) is not None), None)
    if stats is None:
        coverage = "The build statistics were not recorded."
    else:
        coverage = (
            f"Built from {stats.source}: {stats.triples} triples, {stats.documents} documents, entity pools "
            + ", ".join(f"{kind} ({size})" for kind, size in stats.pool_sizes.items())
            + f". {len(stats.triples_objects_not_in_corpus)} triple(s) were skipped because none of their objects occurs in the corpus"
            + f"{examples(stats.triples_objects_not_in_corpus)}, {len(stats.triples_without_subject_document)} because no document"
            + f" that mentions an object also mentions the subject{examples(stats.triples_without_subject_document)};"
            + f" {stats.pairs_without_subject} (object, document) pairs were skipped because the document lacks the subject."
        )
    licence = stats.licence if stats is not None else "credentialed"  # unknown inputs: the strictest
    return {"instances_table": "\n".join(lines), "coverage": coverage, "licence": licence}
