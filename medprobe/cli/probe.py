"""`medprobe probe`: run one registered prober on one benchmark task (medprobe.run.run).

Parsing is in two stages. The first reads only `--prober` and `--task`; the second builds a parser
with the common options plus that prober's and that task's own options from medprobe.registry, so
`medprobe probe --prober mask-average --help` lists nothing of the other probers, and a flag of
another prober is an error that names its owner. Options left out are not passed at all: the
prober class's (and the task's) own defaults apply, and `--help` shows them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from medprobe.options import RESAMPLES_OPTION, add
from medprobe.registry import Option, ProberEntry, prober_entry, registry, task_entry, tasks_for

USAGE = "medprobe probe --prober NAME [--task TASK] --dataset D --model M [options]"


def overview() -> str:
    """The probers and the tasks each can run: the help of `medprobe probe` without --prober."""
    probers, tasks = registry().probers, registry().tasks
    width = max(map(len, probers))
    lines = ["probers (medprobe probe --prober NAME --help lists NAME's options):"]
    for name, entry in probers.items():
        lines.append(f"  {name:<{width}}  {entry.description}; model: {entry.model}; tasks: {', '.join(tasks_for(name))}")
    lines.append("")
    lines.append("tasks (--task; default: the prober's own):")
    width = max(map(len, tasks))
    lines.extend(f"  {name:<{width}}  {entry.description}" for name, entry in tasks.items())
    return "\n".join(lines)


def add_probe_command(subparsers: argparse._SubParsersAction) -> None:
    """`probe` in `medprobe --help`; `main` hands `medprobe probe ...` to `run_probe_command` directly."""
    subparsers.add_parser(
        "probe",
        help="run a prober on a benchmark and report its scores",
        add_help=False,
        description=overview(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def first_stage(argv: list[str]) -> argparse.Namespace:
    """--prober and --task only; everything else waits for the parser that knows their options."""
    parser = argparse.ArgumentParser(prog="medprobe probe", add_help=False, usage=USAGE)
    parser.add_argument("--prober", choices=list(registry().probers))
    parser.add_argument("--task", choices=list(registry().tasks))
    known, _ = parser.parse_known_args(argv)
    return known


def probe_parser(prober: str | None, task: str | None) -> argparse.ArgumentParser:
    """The parser of `medprobe probe` for this prober and task (their options only)."""
    parser = argparse.ArgumentParser(
        prog="medprobe probe",
        usage=USAGE,
        description=(
            "Load a benchmark with load_dataset (a folder written by `medprobe build`, or a Hub id), run a "
            "prober with a model, print a per-group table and write a results JSON. On several processes or GPUs: "
            "`accelerate launch --multi_gpu --num_processes N -m medprobe.cli probe ...` (or `torchrun --nproc_per_node N "
            "-m medprobe.cli probe ...`) splits the queries, or the trainings, over them and gives the same results."
        ),
        epilog=None if prober else overview(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--prober", required=True, choices=list(registry().probers), help="which prober (see the list below)")
    default_task = prober_entry(prober).default_task if prober else None
    parser.add_argument(
        "--task",
        choices=list(registry().tasks),
        default=default_task,
        help=f"which benchmark task (default: the prober's own{f': {default_task}' if default_task else ''})",
    )
    parser.add_argument("--dataset", required=True, help="a folder written by `medprobe build`, or a Hub dataset id")
    parser.add_argument("--config", help="dataset config, e.g. full or hard (default: the dataset's default)")
    parser.add_argument("--split", default="test", help="split to probe (default: test)")
    parser.add_argument(
        "--model",
        required=True,
        help="a model folder, a Hub id, or a packaged model: minilm (encoder), smollm2 (causal LM)",
    )
    parser.add_argument(
        "--out",
        default="results.json",
        help="results JSON to write, with the per-item outcomes beside it (NAME.outcomes.jsonl) (default: results.json); "
        "an earlier run there is replaced, and the command says which",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a file medprobe did not write at an output path: --out, its outcomes file beside it, --plot or a "
        "task's output file (default: such a file is refused, naming it, before anything loads)",
    )
    parser.add_argument("--plot", metavar="PNG", help="also draw a bar chart of the per-group scores (matplotlib)")
    parser.add_argument("--seed", type=int, help="random seed (default: the prober's or task's own)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, ... (default: cuda when available)")
    what = "bootstrap resamples of the 95%% interval of every overall metric"
    add(parser, RESAMPLES_OPTION, f"{what} (default: {RESAMPLES_OPTION.default}; seeded, deterministic)", default=False)
    if prober:
        entry = prober_entry(prober)
        add_options(parser, f"--prober {prober} ({entry.description})", entry.options)
    if default_task or task:
        name = task or default_task
        add_options(parser, f"--task {name}", task_entry(name).options)
    return parser


def add_options(parser: argparse.ArgumentParser, title: str, options: tuple[Option, ...]) -> None:
    if options:
        group = parser.add_argument_group(title)
        for option in options:
            option.add_to(group)


def owners(flag: str) -> list[str]:
    """Which probers and tasks have the option `flag` (for the error about a foreign flag)."""
    found = [f"--prober {name}" for name, entry in registry().probers.items() if any(o.flag == flag for o in entry.options)]
    return found + [f"--task {name}" for name, entry in registry().tasks.items() if any(o.flag == flag for o in entry.options)]


def refuse_foreign_options(parser: argparse.ArgumentParser, argv: list[str], prober: str, task: str) -> None:
    """A flag of another prober or task would be silently ignored: an error (exit 2) naming its owner."""
    _, unknown = parser.parse_known_args(argv)
    for word in unknown:
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and owners(flag):
            parser.error(
                f"{flag} is an option of {', '.join(owners(flag))}, not of --prober {prober} with --task {task} "
                f"(see medprobe probe --prober {prober} --help)"
            )
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")


def replace_removed_prober(argv: list[str]) -> list[str]:
    """`--prober rank-change [--scorer S]` (removed; kept for one release): the candidate scorer it would
    have built (S, or the one the model's config calls for) with --task context_variance, and a warning."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag in ("--prober", "--model", "--scorer", "--task"):
        parser.add_argument(flag)
    known, rest = parser.parse_known_args(argv)
    if known.prober != "rank-change":
        return argv
    from medprobe.contracts import UserError
    from medprobe.registry import REMOVED_PROBER_TASKS, REMOVED_PROBERS

    if known.scorer in ("mask-average", "causal-lm"):
        scorer = known.scorer
    elif known.model and known.scorer in (None, "auto") and not ({"-h", "--help"} & set(argv)):
        from medprobe.tasks.context_variance_ranks import scorer_kind

        scorer = scorer_kind(known.model)
    else:
        raise UserError(f"--prober rank-change was removed: {REMOVED_PROBERS['rank-change']}")
    task = known.task or REMOVED_PROBER_TASKS["rank-change"]
    print(
        f"warning: --prober rank-change is deprecated and will be removed; running --prober {scorer} --task {task} "
        f"(context variance takes any candidate scorer: mask-average, causal-lm or contrastive)",
        file=sys.stderr,
    )
    return ["--prober", scorer, "--task", task, *(["--model", known.model] if known.model else []), *rest]


def parse_probe_arguments(argv: list[str]) -> argparse.Namespace:
    argv = replace_removed_prober(argv)
    known = first_stage(argv)
    parser = probe_parser(known.prober, known.task)
    if known.prober is None or "-h" in argv or "--help" in argv:
        return parser.parse_args(argv)  # prints the help, or the error that --prober is required
    task = known.task or prober_entry(known.prober).default_task
    refuse_foreign_options(parser, argv, known.prober, task)
    return parser.parse_args(argv)


def run_probe_command(argv: list[str], *, print_fn: Callable[[str], None] = print) -> int:
    """`medprobe probe ARGV`; `print_fn` receives the results table (the demo prints its own)."""
    from medprobe.local_paths import dataset_source
    from medprobe.run import RunRequest, check_request, refuse_foreign_outputs, run

    args = parse_probe_arguments(argv)
    prober, task = prober_entry(args.prober), task_entry(args.task)
    given = vars(args)
    request = RunRequest(
        task=args.task,
        prober=args.prober,
        dataset=args.dataset,
        config=args.config,
        split=args.split,
        model=args.model,
        seed=args.seed,
        device=args.device,
        prober_options={o.dest: given[o.dest] for o in prober.options if o.dest in given},
        task_options={o.dest: given[o.dest] for o in task.options if o.dest in given},
        out=args.out,
        plot=args.plot,
        **({"resamples": args.resamples} if args.resamples else {}),
    )
    entries = check_request(request)  # the outputs first, before the model
    if not args.overwrite:
        refuse_foreign_outputs(request, entries)  # a user's file at --out, or beside it under a name --out gives
    say_replaced_run(args.out)
    check_model_first(entries.prober, args.model)
    dataset_source(args.dataset)  # a typo'd folder, or a Hub id while offline: one line now, not after datasets' retries
    run(request, print_fn=print_fn, entries=entries)
    return 0


def say_replaced_run(out: str | None) -> None:
    """An earlier run at --out (the default results.json too) is replaced by this one: say which, before it starts
    (once: under a launch, by the first process; its RANK is read without joining the process group)."""
    import os

    from medprobe.distributed import launched
    from medprobe.records.owned import describe_run, earlier_run

    if launched() and os.environ.get("RANK", "0") != "0":
        return
    earlier = earlier_run(out) if out else None
    if earlier is not None:
        print(
            f"medprobe: --out {out} holds an earlier run ({describe_run(earlier)}); this run replaces it when it "
            "finishes (give another --out to keep it)",
            file=sys.stderr,
            flush=True,
        )


def check_model_first(prober: ProberEntry, model: str) -> None:
    """A --model that cannot load fails here, in a fraction of a second, not after the dataset and torch
    have loaded (seconds). Only medprobe's own probers: a plugin's may take a model that is no model folder."""
    if prober.target.startswith("medprobe."):
        from medprobe.models import check_model

        check_model(model)


if __name__ == "__main__":
    sys.exit(run_probe_command(sys.argv[1:]))
