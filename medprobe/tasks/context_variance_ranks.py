"""Rank changes under growing context: how the context-variance task ranks its rows.

Every row of a context-variance dataset is a cloze query preceded by the segments S1..Si of a
document (step i). `rank_rows` scores the row's candidates at the answer slot with any candidate
scorer and turns the scores into ranks; `ucm_steps` pairs step i with step i-1 of the same
instance and gives the `ucm` evaluate module its inputs (rank changes of the target, the added
object and the correct and incorrect objects already in the context).

A scorer is any object with

    score_candidates(queries: Sequence[str], candidates: Sequence[Sequence[str]]) -> list[numpy.ndarray]

(`medprobe.contracts.CandidateScorer`) where each query holds the answer slot `[Y]` (`medprobe.contracts.MASK_SLOT`)
and each array holds one score per candidate of that query, higher = better: every prober registered
with the candidate-scoring kind (mask-average for masked LMs, causal-lm for causal LMs, contrastive
for encoders). `scorer_kind` reads which of the first two fits a model from its config (for the
deprecated `--prober rank-change`, medprobe.cli.probe).

Ranks are 1-based. Equal scores are broken by candidate order: of two candidates with the same
score, the one listed first in the row's `candidates` (sorted names) gets the better rank, so
ranks, rank changes and UCM shares are the same on every run and machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import datasets
import numpy as np

from medprobe import distributed
from medprobe.contracts import MASK_SLOT, CandidateScorer, UserError
from medprobe.progress import progress_bar

ROW_MASK = "[MASK]"  # the answer slot as the dataset rows write it
CONTEXT_VARIANCE_FIELDS = (
    "row_id",
    "instance_id",
    "relation",
    "step",
    "text",
    "target",
    "added_object",
    "added_is_correct",
    "correct_objects",
    "incorrect_objects",
    "gold_objects",
    "candidates",
)


def scorer_kind(model: str) -> str:
    """`causal-lm` for a causal LM, `mask-average` for a masked LM (from the model's config)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

    from medprobe.models import load_config

    config = load_config(model)
    architectures = " ".join(config.architectures or [])
    if "ForMaskedLM" in architectures or "ForPreTraining" in architectures:
        return "mask-average"
    if "ForCausalLM" in architectures:
        return "causal-lm"
    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "mask-average"
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal-lm"
    raise UserError(
        f"cannot tell how to score candidates with {model!r} (model type {config.model_type!r}); "
        "pass --prober mask-average, causal-lm or contrastive"
    )


def slot_query(text: str, row_id: str) -> str:
    """A row's text with its [MASK] turned into the scorers' [Y] slot."""
    if text.count(ROW_MASK) != 1 or MASK_SLOT in text:
        raise UserError(
            f"row {row_id!r}: expected exactly one {ROW_MASK} (the answer slot) and no {MASK_SLOT} in the text, got {text[-200:]!r}"
        )
    return text.replace(ROW_MASK, MASK_SLOT)


def ranks_from_scores(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every candidate; ties go to the candidate listed first, NaN ranks last."""
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=-np.inf)
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


@dataclass
class RowRanks:
    """The ranks one row needs: its target, its added object, the objects in its context, and the
    object the next step adds (for that object's rank before it is added)."""

    row_id: str
    target: str
    ranks: dict[str, int]
    gold_rank: int | None  # best rank of any of the triple's objects among the candidates

    def __getitem__(self, name: str) -> int:
        return self.ranks[name]


def scoring_settings(scorer: CandidateScorer) -> dict:
    """What the results file records of the ranking: the scorer's class, the tie break and its settings."""
    return {"scorer": type(scorer).__name__, "tie_break": "candidate order", **getattr(scorer, "settings", {})}


def score_queries(
    scorer: CandidateScorer, queries: list[str], candidates: list[list[str]], batch_size: int = 64, progress: bool = True
) -> list[np.ndarray]:
    """Scores for each distinct (query, candidates) pair once, in batches of `batch_size` queries.

    Under a launch each process scores its share of the pairs, gathered back in order
    (`distributed.map_split`); a collective scorer (it spreads its own encoding) is called with
    every pair everywhere."""
    if not callable(getattr(scorer, "score_candidates", None)):
        raise TypeError(f"{type(scorer).__name__} has no score_candidates(queries, candidates) method")
    keys = [(query, tuple(names)) for query, names in zip(queries, candidates)]
    unique = list(dict.fromkeys(keys))

    def score_share(share: list[tuple[str, tuple[str, ...]]]) -> list[np.ndarray]:
        scored: list[np.ndarray] = []
        batches = range(0, len(share), batch_size)
        for start in progress_bar(batches, desc="scoring context steps", unit="batch", disable=not progress):
            batch = share[start : start + batch_size]
            results = scorer.score_candidates([q for q, _ in batch], [list(c) for _, c in batch])
            if len(results) != len(batch):
                raise UserError(
                    f"{type(scorer).__name__}.score_candidates returned {len(results)} arrays for {len(batch)} queries"
                )
            for key, values in zip(batch, results):
                if len(values) != len(key[1]):
                    raise UserError(
                        f"{type(scorer).__name__}.score_candidates returned {len(values)} scores for {len(key[1])} candidates"
                    )
                scored.append(np.asarray(values))
        return scored

    values = score_share(unique) if getattr(scorer, "collective", False) else distributed.map_split(score_share, unique)
    scores = dict(zip(unique, values))
    return [scores[key] for key in keys]


def rank_rows(ds: datasets.Dataset, scorer: CandidateScorer, batch_size: int = 64, progress: bool = True) -> list[RowRanks]:
    """One RowRanks per row of a context-variance dataset, in dataset order: the ranks of its target,
    its added object, the objects in its context and the object the next step adds."""
    rows = ds.select_columns(list(CONTEXT_VARIANCE_FIELDS)).to_list()
    next_added = {(r["instance_id"], r["step"]): r["added_object"] for r in rows}
    queries = [slot_query(r["text"], r["row_id"]) for r in rows]
    all_scores = score_queries(scorer, queries, [r["candidates"] for r in rows], batch_size, progress)
    return [rank_row(row, scores, next_added) for row, scores in zip(rows, all_scores)]


def rank_row(row: dict, scores: np.ndarray, next_added: dict[tuple[str, int], str]) -> RowRanks:
    """The ranks one row tracks, from its candidates' scores; every tracked object must be a candidate."""
    ranks = ranks_from_scores(scores)
    position = {name: index for index, name in enumerate(row["candidates"])}
    upcoming = next_added.get((row["instance_id"], row["step"] + 1))
    tracked = [row["target"], row["added_object"], upcoming, *row["correct_objects"], *row["incorrect_objects"]]
    missing = [name for name in tracked if name and name not in position]
    if missing:
        raise UserError(f"row {row['row_id']!r}: {', '.join(map(repr, missing))} not among the row's candidates")
    gold = [ranks[position[name]] for name in row["gold_objects"] if name in position]
    return RowRanks(
        row_id=row["row_id"],
        target=row["target"],
        ranks={name: int(ranks[position[name]]) for name in tracked if name},
        gold_rank=int(min(gold)) if gold else None,
    )


@dataclass
class UCMSteps:
    """The `ucm` metric's inputs and, aligned with them, which instance each step and each pair of
    gold ranks belongs to and how many candidates each step ranked (for per-instance outcomes)."""

    inputs: dict[str, list]
    step_instances: list[str]
    step_candidates: list[int]
    rank_instances: list[str]


def ucm_steps(ds: datasets.Dataset, row_ranks: list[RowRanks]) -> UCMSteps:
    """Keyword arguments of the `ucm` metric (`inputs`): one entry per step i >= 1 (step i against step i-1 of
    the same instance), plus the best gold rank per instance without context (step 0) and with the whole
    context (its last step); with the instance of every step and of every gold-rank pair (see `UCMSteps`)."""
    rows = ds.select_columns(
        [
            "instance_id",
            "relation",
            "step",
            "added_object",
            "added_is_correct",
            "correct_objects",
            "incorrect_objects",
            "candidates",
        ]
    ).to_list()
    by_key = {(row["instance_id"], row["step"]): (row, ranks) for row, ranks in zip(rows, row_ranks)}
    inputs: dict[str, list] = {
        name: []
        for name in (
            "target_rank_before",
            "target_rank_after",
            "added_is_correct",
            "groups",
            "added_rank_changes",
            "correct_rank_changes",
            "incorrect_rank_changes",
        )
    }
    steps = UCMSteps(inputs, [], [], [])
    last_step: dict[str, int] = {}
    for (instance, step), (row, after) in by_key.items():
        last_step[instance] = max(step, last_step.get(instance, 0))
        if step == 0:
            continue
        if (instance, step - 1) not in by_key:
            raise UserError(f"instance {instance!r} has step {step} but no step {step - 1}: its rank change cannot be computed")
        previous, before = by_key[(instance, step - 1)]
        added = row["added_object"]
        inputs["target_rank_before"].append(before[after.target])
        inputs["target_rank_after"].append(after[after.target])
        inputs["added_is_correct"].append(row["added_is_correct"])
        inputs["groups"].append(row["relation"])
        inputs["added_rank_changes"].append(after[added] - before[added])
        # the objects already in the context before this step (the added one is counted as O_a)
        for kind in ("correct", "incorrect"):
            existing = [name for name in previous[f"{kind}_objects"] if name != added]
            inputs[f"{kind}_rank_changes"].append([after[name] - before[name] for name in existing])
        steps.step_instances.append(instance)
        steps.step_candidates.append(len(row["candidates"]))
    without_context, with_context = [], []
    for instance, last in last_step.items():
        if (instance, 0) not in by_key:
            raise UserError(f"instance {instance!r} has no step 0 (the prompt alone)")
        first_gold, last_gold = by_key[(instance, 0)][1].gold_rank, by_key[(instance, last)][1].gold_rank
        if first_gold is not None and last_gold is not None:
            without_context.append(first_gold)
            with_context.append(last_gold)
            steps.rank_instances.append(instance)
    if without_context:
        inputs["ranks_without_context"] = without_context
        inputs["ranks_with_context"] = with_context
    return steps


def first_instances_per_relation(ds: datasets.Dataset, n: int) -> datasets.Dataset:
    """All rows of the first `n` instances of every relation (in dataset order)."""
    kept: dict[str, list[str]] = {}
    for instance, relation in zip(ds["instance_id"], ds["relation"]):
        chosen = kept.setdefault(relation, [])
        if instance not in chosen and len(chosen) < n:
            chosen.append(instance)
    keep = {instance for chosen in kept.values() for instance in chosen}
    return ds.select([i for i, instance in enumerate(ds["instance_id"]) if instance in keep])


def format_ucm_table(scores: dict) -> str:
    """UCM_k per relation, UCM_m over all steps and the macro average, then the rank changes."""
    groups = scores.get("per_group", {})
    width = max([len("relation"), len("UCM_m (all)"), *(len(g) for g in groups)])
    header = f"{'relation':<{width}}  {'understand':>10}  {'confuse':>8}  {'misund.':>8}  {'steps':>6}  {'excluded':>8}"
    lines = [header, "-" * len(header)]

    def line(label: str, values: dict) -> str:
        shares = "  ".join(
            f"{_percent(values.get(s)):>{w}}" for s, w in (("understand", 10), ("confuse", 8), ("misunderstand", 8))
        )
        counts = f"  {values['steps']:>6}  {values['excluded_steps']:>8}" if "steps" in values else ""
        return f"{label:<{width}}  {shares}{counts}"

    lines += [line(group, values) for group, values in groups.items()]
    lines += ["-" * len(header), line("UCM_m (all)", scores)]
    if "macro_understand" in scores:
        lines.append(line("macro", {s: scores[f"macro_{s}"] for s in ("understand", "confuse", "misunderstand")}))
    lines.append("")
    lines.append(
        f"{'mean rank change':<24}" + "".join(f"{name:>11}" for name in ("RC-Ot", "RC-Oa", "RC-Ocor", "RC-Oincor", "steps"))
    )
    for kind, values in scores["rank_change"].items():
        cells = "".join(f"{_signed(values.get(name)):>11}" for name in ("RC-Ot", "RC-Oa", "RC-Ocor", "RC-Oincor"))
        lines.append(f"{kind.replace('_', ' ') + ' object':<24}{cells}{values['steps']:>11}")
    accuracies = [key for key in scores if key.startswith("acc@")]
    if accuracies:
        lines.append("")
        lines += [f"{key:<24}{_percent(scores[key]):>11}" for key in accuracies]
    return "\n".join(lines)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def row_rank_records(ds: datasets.Dataset, row_ranks: list[RowRanks]) -> Iterator[dict]:
    """One record per row (a line of --predictions): its id, step, best gold rank and the ranks of the objects it tracks."""
    for step, ranked in zip(ds["step"], row_ranks):
        yield {"row_id": ranked.row_id, "step": step, "gold_rank": ranked.gold_rank, "ranks": ranked.ranks}
