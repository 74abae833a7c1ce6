"""`medprobe probe --prober rank-change`: UCM on a context-variance dataset.

Loads a context-variance folder (or Hub id) with `load_dataset`, scores every context step with
a ranking prober's `score_candidates` (mask-average for masked LMs, causal-LM scoring for causal
LMs), pairs each step with the previous one, and reports Understand / Confuse / Misunderstand
shares per relation (UCM_k) and overall (UCM_m) from the `ucm` evaluate module, the mean rank
changes, and top-k accuracy without and with context.
"""

from __future__ import annotations

import argparse
import importlib
import time
from pathlib import Path

import evaluate

from probers.probe import check_fields, load_probe_dataset, make_ranking_prober
from probers.lm.rank_change import (
    CONTEXT_VARIANCE_FIELDS,
    RankChangeProbe,
    first_instances_per_relation,
    format_ucm_table,
    dump_row_ranks,
    ucm_inputs,
)
from probers.hub.resources import metric_path
from probers.results import RunRecord, save_run
from probers.api import UserError

# --scorer name -> (module, class) of the ranking probers whose score_candidates the rank-change prober uses
SCORER_CLASSES = {"mask-average": ("probers.lm.mask_average", "MaskAverageProbe"), "causal-lm": ("probers.lm.causal_lm", "CausalLMProbe")}


def scorer_kind(model: str) -> str:
    """`causal-lm` for a causal LM, `mask-average` for a masked LM (from the model's config)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES

    from probers.models import load_config

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
    raise UserError(f"cannot tell how to score candidates with {model!r} (model type {config.model_type!r}); pass --scorer")


def make_rank_change_scorer(args: argparse.Namespace):
    """The ranking prober named by --scorer, built the way `--prober <scorer>` builds it."""
    if not args.model:
        raise UserError("--prober rank-change needs --model (a model folder, a Hub id, or minilm/smollm2)")
    kind = scorer_kind(args.model) if args.scorer == "auto" else args.scorer
    module, name = SCORER_CLASSES[kind]
    try:
        importlib.import_module(module)
    except ImportError as err:
        raise UserError(f"the {kind} scorer ({module}.{name}) is not available in this installation: {err}") from err
    scorer = make_ranking_prober(argparse.Namespace(**{**vars(args), "prober": kind}))
    if not callable(getattr(scorer, "score_candidates", None)):
        raise UserError(f"the {kind} prober has no score_candidates(queries, candidates); the rank-change prober needs it")
    return scorer


def run_rank_change(args: argparse.Namespace, scorer=None, timings: dict | None = None) -> int:
    """Rank every context step of a context-variance dataset, score UCM, print, save and plot."""
    timings = dict(timings or {})
    start = time.perf_counter()
    ds = load_probe_dataset(args.dataset, args.config, args.split)
    check_fields(ds, CONTEXT_VARIANCE_FIELDS, f"dataset {args.dataset!r} (config {args.config!r})")
    if args.per_relation:
        rows_in = ds.num_rows
        ds = first_instances_per_relation(ds, args.per_relation)
        print(f"probing the first {args.per_relation} instances of each relation: {ds.num_rows:,} of {rows_in:,} rows")
    timings["load_dataset"] = time.perf_counter() - start
    if scorer is None:
        start = time.perf_counter()
        scorer = make_rank_change_scorer(args)
        timings["load_model"] = time.perf_counter() - start

    probe = RankChangeProbe(scorer, batch_size=args.batch_size)
    start = time.perf_counter()
    row_ranks = probe.rank(ds)
    timings["probe"] = time.perf_counter() - start
    timings.update(getattr(scorer, "timings", {}))

    start = time.perf_counter()
    inputs = ucm_inputs(ds, row_ranks)
    scores = evaluate.load(metric_path("ucm")).compute(**inputs, k=args.k)
    timings["score"] = time.perf_counter() - start

    record = RunRecord(
        benchmark=Path(args.dataset.rstrip("/")).name,
        dataset=args.dataset,
        config=args.config,
        split=args.split,
        prober=args.prober,
        model=args.model,
        seed=args.seed,
        settings={"k": args.k, "per_relation": args.per_relation, "batch_size": args.batch_size, **probe.settings},
        metrics={key: value for key, value in scores.items() if key != "per_group"},
        per_group=scores["per_group"],
        timings={phase: round(seconds, 3) for phase, seconds in timings.items()},
        counts={
            "rows": ds.num_rows,
            "instances": len(set(ds["instance_id"])),
            "steps": len(inputs["target_rank_before"]),
            "candidates": len({name for names in ds["candidates"] for name in names}),
        },
    )
    print(format_ucm_table(scores))
    plotted = RunRecord(**{**vars(record), "per_group": {g: v for g, v in record.per_group.items() if v["steps"]}})
    save_run(
        record, args.out, plot=args.plot, plot_metric="understand", plot_record=plotted,
        more=[(args.predictions, lambda temp: dump_row_ranks(temp, ds, row_ranks))],
    )  # fmt: skip
    return 0
