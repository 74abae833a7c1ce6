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
from typing import TYPE_CHECKING

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
from probers.tasks.mst import add_mlm_head_arguments, run_mlm_head
from probers.atomic import check_distinct_outputs, check_writable, write_all_atomically
from probers.results import RunRecord, format_table, plot_format, save_run
from probers.api import UserError

if TYPE_CHECKING:  # imported where used, so that `medprobe --help` stays fast
    import datasets

# prober name -> what it needs from the dataset; the probers of the other benchmarks add theirs.
RANKING_PROBERS: dict[str, str] = {
    "contrastive": "Contrastive-Probe: [CLS] retrieval over the answer space, optionally after rewiring (encoder, no MLM head)",
    "mask-predict": "X-FACTR-style decoding of 1..M masks with a masked-LM head (generates answers)",
    "mask-average": "ranks the answer space by the mean token log-probability at L masks (masked LM)",
    "generative": "beam-search answers from a seq2seq model (T5 sentinel or BART mask)",
    "causal-lm": "ranks candidates by the log-likelihood of the filled prompt under a decoder-only LM",
}
# context-variance datasets: ranks per context step, scored with a ranking prober's score_candidates
RANK_CHANGE_PROBERS = {"rank-change": "rank changes of target, added, correct and incorrect objects per context step (UCM)"}
# probers that pick one of fixed choices per item (MST), with their own runner
CHOICE_PROBERS: dict[str, str] = {"mlm-head": "frozen encoder, trained masked-LM head (MST)"}
# the runners that write --predictions (pair-classifier and mlm-head write none)
PREDICTION_WRITERS = {*RANKING_PROBERS, *RANK_CHANGE_PROBERS}
# the ranking probers built on score_candidates, which can re-rank another run's shortlist (--rerank)
RERANKING_SCORERS = ("mask-average", "causal-lm")


def load_probe_dataset(dataset: str, config: str | None, split: str) -> datasets.Dataset:
    """`load_dataset(dataset, config, split=split)`, or one line naming the path, what is wrong and what to do."""
    import datasets

    refuse_dataset_script(dataset)
    try:
        return datasets.load_dataset(dataset, config, split=split)
    except load_errors() as err:  # evaluated only when something was raised
        raise UserError(explain_load_failure(dataset, config, split, err)) from err


def dataset_config_names(dataset: str) -> list[str]:
    """The configs of --dataset (for probers that run every config), with the errors of `load_probe_dataset`."""
    import datasets

    refuse_dataset_script(dataset)
    try:
        return datasets.get_dataset_config_names(dataset)
    except load_errors() as err:  # evaluated only when something was raised
        raise UserError(explain_load_failure(dataset, None, None, err)) from err


def load_errors() -> tuple[type[BaseException], ...]:
    """What `load_dataset` raises for data that does not load: datasets' own errors, pyarrow's (a
    truncated Parquet file), I/O and value errors. Anything else is a bug and keeps its traceback."""
    import pyarrow
    from datasets.exceptions import DatasetsError

    return (DatasetsError, pyarrow.ArrowException, OSError, ValueError)


def refuse_dataset_script(dataset: str) -> None:
    """datasets >= 4 refuses a folder holding `<folder name>.py` (a loading script) with a RuntimeError."""
    path = Path(dataset)
    script = path if path.suffix == ".py" else path / f"{path.name}.py"
    if script.is_file():
        raise UserError(
            f"--dataset {dataset}: {script} is a dataset script, which datasets >= 4 no longer runs; "
            f"build a Parquet folder with `medprobe build <benchmark> --out DIR` and pass --dataset DIR"
        )


def explain_load_failure(dataset: str, config: str | None, split: str | None, err: BaseException) -> str:
    """One line: the path, what is wrong with it (diagnosed from the folder where possible), what to do."""
    from probers.hub.resources import available

    where = f"config {config!r}" + (f", split {split!r}" if split else "")
    folder = Path(dataset).expanduser()
    if not folder.exists():
        return (
            f"could not load dataset {dataset!r} ({where}): {first_line(err)}. Build a local folder first "
            "(medprobe build ... --out DIR) and pass it as --dataset DIR"
        )
    if not folder.is_dir():
        return f"--dataset {dataset} is a file; expected a folder written by `medprobe build` (README.md + Parquet files)"
    if not (folder / "README.md").is_file():
        found = ", ".join(sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())[:6]) or "nothing"
        return (
            f"--dataset {dataset} has no README.md card, so it is not a folder written by `medprobe build` "
            f"(it holds {found}: a raw release folder?). Build it first: medprobe build <benchmark> --data-dir "
            f"{dataset} --out DIR (benchmarks: {', '.join(available('datasets'))}), then pass --dataset DIR"
        )
    problem = folder_problem(folder, config, split)
    if problem is None:  # e.g. an unknown config or split: datasets' message lists the ones there are
        return f"--dataset {dataset} does not load ({where}): {first_line(err)}"
    return f"--dataset {dataset} does not load ({where}): {problem}. Rebuild it: medprobe build {card_benchmark(folder)} [--data-dir RELEASE] --out {dataset}"


def card_benchmark(folder: Path) -> str:
    """The benchmark a built folder's card is for (from its pretty_name), or `<benchmark>`."""
    import yaml

    from probers.hub.resources import available

    try:
        header = (folder / "README.md").read_text(encoding="utf-8").split("---", 2)[1]
        pretty = str(yaml.safe_load(header).get("pretty_name", ""))
    except (OSError, IndexError, AttributeError, yaml.YAMLError):
        return "<benchmark>"
    squeezed = "".join(ch for ch in pretty.lower() if ch.isalnum())
    names = [name for name in available("datasets") if squeezed.startswith(name.lower().replace("_", ""))]
    return names[0] if len(names) == 1 else "<benchmark>"


def folder_problem(folder: Path, config: str | None, split: str | None) -> str | None:
    """What is wrong with the data files of a built folder's config and split, or None if nothing is found.

    Reads only the card and the Parquet footers: an unreadable (truncated) Parquet file, data files
    that are missing, or a row count that differs from the card's `dataset_info` (a stale card).
    """
    import datasets
    import pyarrow.parquet as pq

    try:
        builder = datasets.load_dataset_builder(str(folder), config)
    except Exception:  # noqa: BLE001 - the diagnosis is best effort; the caller falls back to load_dataset's message
        return None
    split = split or next(iter(builder.config.data_files or {}), None)
    if split is None or split not in (builder.config.data_files or {}):
        return None
    files = [str(f) for f in builder.config.data_files[split]]
    name = f"{builder.config.name}/{split}"
    if not files:
        return f"the card names data files for {name} but none exist"
    rows = 0
    for file in files:
        try:
            rows += pq.read_metadata(file).num_rows
        except Exception as err:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ... for a broken file
            return f"{file} is not a readable Parquet file (truncated or corrupt: {first_line(err)})"
    stated = builder.info.splits[split].num_examples if builder.info.splits and split in builder.info.splits else None
    if stated is not None and stated != rows:
        return (
            f"its README.md card says {name} has {stated:,} rows but its Parquet files hold {rows:,} "
            "(a stale card, or data files missing or replaced)"
        )
    return None


def first_line(err: BaseException) -> str:
    """The first non-empty line of an error message, without a trailing full stop."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return (lines[0] if lines else type(err).__name__).rstrip(".")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


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
    parser.add_argument(
        "--prober", required=True, choices=sorted({*RANKING_PROBERS, *RANK_CHANGE_PROBERS, *CHOICE_PROBERS}), help="which prober"
    )
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
    ranking.add_argument(
        "--exclude-head", action="store_true",
        help="leave each query's own head name out of its predictions (MedLAMA's answer space holds the heads, "
             "and untuned encoders rank the head first for most queries; the paper keeps it)",
    )  # fmt: skip

    rank_change = parser.add_argument_group(
        "rank-change prober (context-variance datasets; --k gives the top-k accuracies without and with context, "
        "--per-relation N keeps the first N instances of each relation, --predictions writes the ranks of every row)"
    )
    rank_change.add_argument(
        "--scorer", choices=["auto", "mask-average", "causal-lm"], default="auto",
        help="how candidates are scored at the answer slot (default: auto = causal-lm for causal LMs, else mask-average)",
    )  # fmt: skip

    generating = parser.add_argument_group("mask-predict and generative probers (they generate answer strings)")
    generating.add_argument("--num-masks", type=int, default=5, help="mask-predict: fill 1..N masks (default: 5)")
    generating.add_argument(
        "--init-method", choices=["independent", "order", "confidence"], default="order",
        help="mask-predict: initial fill (default: order)",
    )  # fmt: skip
    generating.add_argument(
        "--iter-method", choices=["none", "order"], default="none",
        help="mask-predict: refinement after the initial fill, order = Order+Order (default: none)",
    )  # fmt: skip
    generating.add_argument("--max-iter", type=int, default=10, help="mask-predict: at most N refinement rounds (default: 10)")
    generating.add_argument("--beam-size", type=int, help="beam width (default: 5 for mask-predict, 10 for generative)")
    generating.add_argument("--num-return", type=int, default=10, help="generative: sequences returned per query (default: 10)")
    generating.add_argument("--max-new-tokens", type=int, default=24, help="generative: longest answer in tokens (default: 24)")
    generating.add_argument("--only-candidates", action="store_true", help="drop generated answers that are not in the candidate set")

    scoring = parser.add_argument_group("mask-average and causal-lm probers (they score the candidate set)")
    scoring.add_argument(
        "--length-normalization", choices=["mean", "none"], default="mean",
        help="causal-lm: mean (default) or total log-probability of the scored tokens",
    )  # fmt: skip
    scoring.add_argument("--no-suffix", action="store_true", help="causal-lm: score only the answer tokens, not the prompt after the slot")
    scoring.add_argument(
        "--literal-template", action="store_true",
        help="causal-lm: keep the template's space before a punctuation mark after the slot ('[Y] .'); removed by default",
    )  # fmt: skip
    scoring.add_argument("--rerank", metavar="JSONL", help="rank only the names another run wrote with --predictions, per query")
    scoring.add_argument("--rerank-top", type=positive_int, default=100, metavar="N", help="with --rerank: the first N names of each query (default: 100)")
    add_training_arguments(parser)
    add_contrastive_arguments(parser)
    add_mlm_head_arguments(parser)
    parser.set_defaults(func=run_probe)


def add_training_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by the probers that train (pair-classifier, mlm-head); each has its own defaults."""
    group = parser.add_argument_group("training (pair-classifier, mlm-head)")
    group.add_argument("--seeds", type=int, metavar="N",
                       help="train with N seeds (--seed, --seed+1, ...) and report mean and std "
                            "(default: pair-classifier 1, the paper used 3; mlm-head 3)")  # fmt: skip
    group.add_argument("--epochs", type=float,
                       help="pair-classifier: at most this many, with early stopping (default: 8); mlm-head: default 20")
    group.add_argument("--learning-rate", type=float, metavar="LR", help="default: pair-classifier 2e-5, mlm-head 1e-3")


def apply_training_defaults(args: argparse.Namespace, **defaults: float) -> None:
    """Fill the training options the user left out with the running prober's defaults, and check them."""
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.seeds < 1:
        raise UserError(f"--seeds must be at least 1, got {args.seeds}")
    if args.epochs is not None and args.epochs <= 0:
        raise UserError(f"--epochs must be positive, got {args.epochs}")


def add_contrastive_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "contrastive (--prober contrastive)",
        "Probe by retrieval; with --rewire-corpus, first rewire the encoder on raw sentences (paper settings by default).",
    )
    group.add_argument("--similarity", choices=["cos", "l2"], default="cos",
                       help="cos (default) or l2: L2 distance on raw [CLS], as the released code searched")
    group.add_argument("--layers", type=int, metavar="L", help="probe with only the first L transformer layers")
    group.add_argument("--rewire-corpus", metavar="FILE", help="rewire first on this text file (one sentence a line)")
    group.add_argument("--rewire-steps", type=int, default=150, metavar="N", help="rewiring steps (default: 150)")
    group.add_argument("--rewire-batch-size", type=int, default=192, metavar="N", help="sentence pairs per step (default: 192)")
    group.add_argument("--temperature", type=float, default=0.04, help="InfoNCE temperature (default: 0.04)")
    group.add_argument("--rewire-learning-rate", type=float, default=2e-5, metavar="LR",
                       help="AdamW learning rate (default: 2e-5)")
    group.add_argument("--rewire-max-length", type=int, default=48, metavar="N",
                       help="word pieces per rewiring text; the mask is always kept (default: 48)")
    group.add_argument("--rewire-mask-ratio", type=float, default=0.5, metavar="R",
                       help="longest masked tail, as a share of the sentence's words (default: 0.5)")
    group.add_argument("--checkpoint-every", type=int, metavar="N",
                       help="save a probe-able checkpoint every N steps under --save-rewired")
    group.add_argument("--save-rewired", metavar="DIR", help="save the rewired model and tokenizer to DIR")


def check_run_options(args: argparse.Namespace) -> None:
    """What must stop a run before any dataset or model loads: an output that cannot be written
    (found after an hour of probing, it would lose the run), and an option the prober would ignore."""
    if args.predictions and args.prober not in PREDICTION_WRITERS:
        raise UserError(f"--predictions: --prober {args.prober} writes no predictions file; leave the option out")
    if getattr(args, "rerank", None) and args.prober not in RERANKING_SCORERS:
        raise UserError(f"--rerank works with --prober {' or '.join(RERANKING_SCORERS)} (they score a shortlist), not {args.prober}")
    outputs = {"--out": args.out, "--predictions": args.predictions, "--plot": args.plot}
    for option, path in outputs.items():
        if path:
            check_writable(path, option)
    check_distinct_outputs(outputs)
    if args.plot:
        plot_format(args.plot)  # matplotlib is installed and writes this image format


def run_probe(args: argparse.Namespace) -> int:
    check_run_options(args)
    if args.prober in RANKING_PROBERS:
        # a dataset that cannot be probed should fail before a model is loaded (or rewired for minutes)
        start = time.perf_counter()
        ds = load_medlama_format(args)
        shortlists = load_rerank_shortlists(args, ds) if getattr(args, "rerank", None) else None
        timings = {"load_dataset": time.perf_counter() - start}
        return run_ranking(args, make_ranking_prober(args, shortlists), timings, ds=ds)
    if args.prober in RANK_CHANGE_PROBERS:
        from probers.tasks.context_variance import run_rank_change

        return run_rank_change(args)
    if args.prober in CHOICE_PROBERS:
        return run_mlm_head(args)
    raise UserError(f"unknown prober {args.prober!r}")


def make_ranking_prober(args: argparse.Namespace, shortlists: dict[str, list[str]] | None = None) -> RankingProber:
    """Build the prober named by --prober from the command-line arguments (`shortlists`: see
    `load_rerank_shortlists`; read here when --rerank is given without them)."""
    if args.prober == "contrastive":
        from probers.contrastive.cli import prober_from_args

        return prober_from_args(args)
    if args.prober in ("mask-predict", "mask-average", "generative", "causal-lm"):
        if getattr(args, "rerank", None) and shortlists is None:
            shortlists = load_rerank_shortlists(args, load_medlama_format(args))
        return make_language_model_prober(args, shortlists)
    raise UserError(f"no ranking prober named {args.prober!r}")


def make_language_model_prober(args: argparse.Namespace, shortlists: dict[str, list[str]] | None = None) -> RankingProber:
    """mask-predict, mask-average, generative or causal-lm, loaded from --model; a scorer restricted
    to `shortlists` (query -> names) when given."""
    if not args.model:
        raise UserError(f"--prober {args.prober} needs --model (a model folder, a Hub id, or smollm2 for causal-lm)")
    common = {"device": args.device, "batch_size": args.batch_size}
    if args.prober == "mask-predict":
        from probers.lm.mask_predict import MaskPredictProbe

        return MaskPredictProbe.from_pretrained(
            args.model, num_masks=args.num_masks, init_method=args.init_method, iter_method=args.iter_method,
            max_iter=args.max_iter, beam_size=args.beam_size or 5, only_candidates=args.only_candidates, **common,
        )  # fmt: skip
    if args.prober == "generative":
        from probers.lm.seq2seq import GenerativeProbe

        return GenerativeProbe.from_pretrained(
            args.model, beam_size=args.beam_size or 10, num_return=args.num_return,
            max_new_tokens=args.max_new_tokens, only_candidates=args.only_candidates, **common,
        )  # fmt: skip
    if args.prober == "mask-average":
        from probers.lm.mask_average import MaskAverageProbe

        scorer = MaskAverageProbe.from_pretrained(args.model, **common)
    else:
        from probers.lm.causal_lm import CausalLMProbe

        scorer = CausalLMProbe.from_pretrained(
            args.model, length_normalization=args.length_normalization, score_suffix=not args.no_suffix,
            literal_template=args.literal_template, **common,
        )  # fmt: skip
    if shortlists is None:
        return scorer
    from probers.lm.candidate_scoring import ShortlistProber

    return ShortlistProber(scorer, shortlists, source=f"top {args.rerank_top} of {args.rerank}")


def load_medlama_format(args: argparse.Namespace) -> datasets.Dataset:
    """The --dataset/--config/--split rows, checked for the fields a ranking prober needs."""
    ds = load_probe_dataset(args.dataset, args.config, args.split)
    check_fields(ds, MEDLAMA_FIELDS, f"dataset {args.dataset!r} (config {args.config!r})")
    return ds


def ranking_rows(args: argparse.Namespace, ds: datasets.Dataset) -> tuple[datasets.Dataset, list[str] | dict[str, list[str]]]:
    """The rows to probe (all, or the first --per-relation N of each relation) and their candidates:
    the answer space of the whole set (also when only a subset is probed), or one per relation."""
    candidates = answer_space(ds) if args.candidates == "set" else relation_answer_spaces(ds)
    return (first_per_group(ds, args.per_relation) if args.per_relation else ds), candidates


def load_rerank_shortlists(args: argparse.Namespace, ds: datasets.Dataset) -> dict[str, list[str]]:
    """Query -> the first --rerank-top names of the --rerank file, checked against the rows to probe
    before any model loads: every row needs a shortlist holding at least one of its candidates."""
    from probers.lm.candidate_scoring import read_shortlists, shortlists_by_query

    probed, candidates = ranking_rows(args, ds)
    if isinstance(candidates, list):
        everything = set(candidates)
        allowed = [everything] * probed.num_rows
    else:
        per_relation = {relation: set(names) for relation, names in candidates.items()}
        allowed = [per_relation.get(relation, set()) for relation in probed["relation"]]
    rows = list(zip(probed["id"], probed["query"], allowed))
    return shortlists_by_query(read_shortlists(args.rerank, args.rerank_top), rows, f"--rerank {args.rerank}")


def run_ranking(
    args: argparse.Namespace, prober: RankingProber, timings: dict | None = None, ds: datasets.Dataset | None = None
) -> int:
    """Probe a MedLAMA-format dataset with a ranking prober; print, save and plot the scores.

    `ds` is the loaded --dataset when the caller already has it (it is loaded here otherwise).
    """
    timings = dict(timings or {})
    start = time.perf_counter()
    if ds is None:
        ds = load_medlama_format(args)
    rows_in = ds.num_rows
    ds, candidates = ranking_rows(args, ds)
    if args.per_relation:
        print(f"probing the first {args.per_relation} queries of each relation: {ds.num_rows:,} of {rows_in:,} queries")
    timings["load_dataset"] = timings.get("load_dataset", 0.0) + time.perf_counter() - start

    start = time.perf_counter()
    predictions = rank_queries(prober, ds, max(args.k), candidates, exclude_head=args.exclude_head)
    timings["probe"] = time.perf_counter() - start
    timings.update(getattr(prober, "timings", {}))
    unanswered = report_unanswered(ds["id"], predictions)

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
            "exclude_head": args.exclude_head,
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
            "queries_without_predictions": unanswered,
        },
    )
    print(format_table(record, [f"acc@{k}" for k in args.k], group_label="relation"))
    save_run(
        record, args.out, plot=args.plot, plot_metric=f"acc@{max(args.k)}",
        more=[(args.predictions, lambda temp: dump_predictions(temp, ds, predictions))],
    )  # fmt: skip
    return 0


def report_unanswered(ids: list[str], predictions: list[list[str]]) -> int:
    """How many queries got no name at all (scored as misses); said aloud, never a silent 0."""
    unanswered = [example_id for example_id, names in zip(ids, predictions) if not names]
    if unanswered:
        print(
            f"note: {len(unanswered):,} of {len(ids):,} queries got no predictions and count as misses "
            f"(e.g. {', '.join(map(str, unanswered[:3]))}); counts.queries_without_predictions in the results file"
        )
    return len(unanswered)


def write_predictions(path: str | Path, ds: datasets.Dataset, predictions: list[list[str]]) -> Path:
    """The top-k names of every query as JSON lines, written atomically."""
    write_all_atomically([(path, lambda temp: dump_predictions(temp, ds, predictions))])
    return Path(path)


def dump_predictions(path: Path, ds: datasets.Dataset, predictions: list[list[str]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for example_id, names in zip(ds["id"], predictions):
            handle.write(json.dumps({"id": example_id, "predictions": names}, ensure_ascii=False) + "\n")
