"""`medprobe probe`: load a benchmark the way a Hub user does, run a prober, score, report.

One command for every prober. The ranking probers (MedLAMA-style cloze queries) share
`run_ranking`; probers of other benchmarks add their own `run_<kind>` and argument group.
Prober classes are imported only when used, so `medprobe --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import datasets

from probers.ranking import (
    MEDLAMA_FIELDS,
    RankingProber,
    answer_space,
    check_fields,
    first_per_group,
    rank_queries,
    relation_answer_spaces,
    score_ranking,
)
from probers.mst_probe import add_mlm_head_arguments, run_mlm_head
from probers.results import RunRecord, format_table, plot_per_group

# prober name -> what it needs from the dataset; the probers of the other benchmarks add theirs.
RANKING_PROBERS: dict[str, str] = {}
# probers that pick one of fixed choices per item, each with its own runner
CHOICE_PROBERS: dict[str, str] = {"mlm-head": "frozen encoder, trained masked-LM head (MST)"}


def load_probe_dataset(dataset: str, config: str | None, split: str) -> datasets.Dataset:
    """`load_dataset(dataset, config, split=split)` with an error that says what to do."""
    try:
        return datasets.load_dataset(dataset, config, split=split)
    except (FileNotFoundError, ValueError, ConnectionError) as err:
        hint = (
            " Build a local folder first (medprobe build ... --out DIR) and pass it as --dataset DIR."
            if not Path(dataset).exists()
            else ""
        )
        raise ValueError(f"could not load dataset {dataset!r} (config {config!r}, split {split!r}): {err}.{hint}") from err


def parse_cutoffs(text: str) -> list[int]:
    try:
        cutoffs = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}") from None
    if not cutoffs or cutoffs[0] < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return cutoffs


def add_probe_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="run a prober on a benchmark and report its scores",
        description=(
            "Load a benchmark with load_dataset (a folder written by `medprobe build` or a Hub id), "
            "run a prober with a model, print a per-group table, and write a results JSON."
        ),
    )
    parser.add_argument("--dataset", required=True, help="a built folder or a Hub dataset id")
    parser.add_argument("--config", help="dataset config, e.g. full or hard (default: the dataset's default)")
    parser.add_argument("--split", default="test", help="split to probe (default: test)")
    parser.add_argument("--prober", required=True, choices=sorted({*RANKING_PROBERS, *CHOICE_PROBERS}), help="which prober")
    parser.add_argument("--model", help="a model folder or Hub id")
    parser.add_argument("--out", default="results.json", help="results JSON to write (default: results.json)")
    parser.add_argument("--plot", metavar="PNG", help="also draw a bar chart of the per-group scores")
    parser.add_argument("--seed", type=int, help="random seed (default: the prober's own)")
    parser.add_argument("--batch-size", type=int, default=128, help="texts per forward pass (default: 128)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, ... (default: cuda when available)")

    ranking = parser.add_argument_group("ranking probers (MedLAMA-style cloze queries)")
    ranking.add_argument("--k", type=parse_cutoffs, default=[1, 10], help="acc@k cut-offs, e.g. 1,5,10 (default: 1,10)")
    ranking.add_argument(
        "--candidates", choices=["set", "relation"], default="set",
        help="rank the whole answer space of the set (default) or only the answers of the query's relation",
    )  # fmt: skip
    ranking.add_argument("--per-relation", type=int, metavar="N", help="probe only the first N queries of each relation")
    ranking.add_argument("--predictions", metavar="JSONL", help="also write the top-k names of every query")
    add_mlm_head_arguments(parser)
    parser.set_defaults(func=run_probe)


def run_probe(args: argparse.Namespace) -> int:
    if args.prober in RANKING_PROBERS:
        return run_ranking(args, make_ranking_prober(args))
    if args.prober == "mlm-head":
        return run_mlm_head(args)
    raise ValueError(f"unknown prober {args.prober!r}")


def make_ranking_prober(args: argparse.Namespace) -> RankingProber:
    """Build the prober named by --prober from the command-line arguments."""
    raise ValueError(f"no ranking prober named {args.prober!r}")


def run_ranking(args: argparse.Namespace, prober: RankingProber, timings: dict | None = None) -> int:
    """Probe a MedLAMA-format dataset with a ranking prober; print, save and plot the scores."""
    timings = dict(timings or {})
    start = time.perf_counter()
    ds = load_probe_dataset(args.dataset, args.config, args.split)
    check_fields(ds, MEDLAMA_FIELDS, f"dataset {args.dataset!r} (config {args.config!r})")
    # the answer space comes from the whole set, also when only a subset of queries is probed
    candidates = answer_space(ds) if args.candidates == "set" else relation_answer_spaces(ds)
    if args.per_relation:
        rows_in = ds.num_rows
        ds = first_per_group(ds, args.per_relation)
        print(f"probing the first {args.per_relation} queries of each relation: {ds.num_rows:,} of {rows_in:,} queries")
    timings["load_dataset"] = time.perf_counter() - start

    start = time.perf_counter()
    predictions = rank_queries(prober, ds, max(args.k), candidates)
    timings["probe"] = time.perf_counter() - start
    timings.update(getattr(prober, "timings", {}))

    start = time.perf_counter()
    scores = score_ranking(ds, predictions, args.k)
    timings["score"] = time.perf_counter() - start

    record = RunRecord(
        benchmark=Path(args.dataset.rstrip("/")).name,
        dataset=args.dataset,
        config=args.config,
        split=args.split,
        prober=args.prober,
        model=args.model,
        seed=args.seed,
        settings={
            "k": args.k,
            "candidates": args.candidates,
            "per_relation": args.per_relation,
            "batch_size": args.batch_size,
            **getattr(prober, "settings", {}),
        },
        metrics={key: value for key, value in scores.items() if key != "per_group"},
        per_group=scores["per_group"],
        timings={phase: round(seconds, 3) for phase, seconds in timings.items()},
        counts={
            "queries": ds.num_rows,
            "candidates": len(candidates) if isinstance(candidates, list) else sum(map(len, candidates.values())),
        },
    )
    print(format_table(record, [f"acc@{k}" for k in args.k], group_label="relation"))
    print(f"wrote {record.save(args.out)}")
    if args.plot:
        print(f"wrote {plot_per_group(record, f'acc@{max(args.k)}', args.plot)}")
    if args.predictions:
        write_predictions(args.predictions, ds, predictions)
        print(f"wrote {args.predictions}")
    return 0


def write_predictions(path: str, ds: datasets.Dataset, predictions: list[list[str]]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for example_id, names in zip(ds["id"], predictions):
            handle.write(json.dumps({"id": example_id, "predictions": names}, ensure_ascii=False) + "\n")
