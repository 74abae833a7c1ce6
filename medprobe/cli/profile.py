"""`medprobe profile`: every benchmark that fits one model, one knowledge-profile table (medprobe.profiling, medprobe.profiling.plan)."""

from __future__ import annotations

import argparse
import textwrap

from medprobe.profiling.plan import KIND_NAMES, MODEL_KIND_HINT, profiled, profiled_benchmarks, quick_help

DESCRIPTION = (
    "Run, for the model's kind (read from its config), every benchmark/prober pair that fits, each as one "
    "`medprobe probe` run; what cannot run is skipped with its reason. Writes "
    "DIR/runs/<run>.json (+ .predictions.jsonl), DIR/profile.json (every run's record, one headline row per "
    "run with its chance level and floor, the skipped list, the data sources), DIR/profile.md (the table) and "
    "DIR/profile.png (needs matplotlib: without it the figure is left out and the output says so). The whole "
    "folder is written beside DIR and replaces it in one rename at the end, under a lock: a failed or interrupted "
    "profile leaves DIR as it was, and a killed one (SIGKILL), or one interrupted after finishing runs, is resumed by "
    "the next profile into DIR, which reuses the runs whose request and data are unchanged. DIR must be new, "
    "empty or a medprobe profile (--overwrite)."
)


def wrapped(text: str, indent: str = "", hang: str = "  ") -> str:
    return textwrap.fill(
        text, width=100, initial_indent=indent, subsequent_indent=indent + hang, break_on_hyphens=False, break_long_words=False
    )


def plan_lines() -> list[str]:
    """What each model kind gets on each profiled benchmark (the registry's profile plans), for --help."""
    lines = []
    for entry in profiled():
        plan = entry.profile
        configs = ", ".join(config for config in plan.configs if config) or "every config"
        floor = f", each with a floor run ({plan.floor_text})" if plan.floor else ""
        kinds = [f"{kind}: {', '.join(probers)}{floor}" for kind, probers in plan.probers.items()]
        kinds += [f"{kind}: skipped" for kind in KIND_NAMES if kind not in plan.probers]
        lines.append(wrapped(f"{entry.benchmark} ({configs}): {'; '.join(kinds)}", "  "))
        lines.append(wrapped(f"without --data-dir: {plan.data_text}", "    "))
    return lines


def epilog() -> str:
    return "\n".join(
        [
            "what runs, per benchmark and model kind:",
            *plan_lines(),
            "",
            wrapped(
                "data: --data-dir NAME=PATH takes a folder built by `medprobe build` as it is, or builds a release folder "
                "into DIR/datasets/NAME first. Publish the profile with `medprobe publish results DIR --model-repo ORG/MODEL`.",
                hang="",
            ),
        ]
    )


def data_dir(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    known = profiled_benchmarks()
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH (NAME one of {', '.join(known)}), got {text!r}")
    if name not in known:
        raise argparse.ArgumentTypeError(f"unknown benchmark {name!r} in {text!r}; use one of {', '.join(known)}")
    return name, path


def add_profile_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="run every benchmark that fits a model and write its knowledge profile",
        description=wrapped(DESCRIPTION, hang=""),
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", required=True, help="a model folder, a Hub id, or a packaged model: minilm, smollm2")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for profile.json/md/png, runs/ and datasets/")
    parser.add_argument(
        "--benchmarks",
        nargs="+",
        choices=profiled_benchmarks(),
        default=list(profiled_benchmarks()),
        metavar="NAME",
        help=f"profile only these ({', '.join(profiled_benchmarks())}; default: all)",
    )
    parser.add_argument(
        "--data-dir",
        dest="data_dirs",
        action="append",
        type=data_dir,
        default=[],
        metavar="NAME=PATH",
        help="data of one benchmark: a `medprobe build` folder, or a release folder built first (repeatable)",
    )
    parser.add_argument(
        "--model-kind",
        choices=list(KIND_NAMES),
        help="the model's kind, when its config cannot say: a model that only a plugin's prober reads (as `probe` takes it)",
    )
    parser.add_argument("--quick", action="store_true", help=quick_help())
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, ... (default: cuda when available)")
    parser.add_argument("--seed", type=int, help="seed of every run (default: each task's and prober's own)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace DIR even when it holds files that are not a medprobe profile's (or files changed since)",
    )
    parser.set_defaults(func=run_profile_command)


def run_profile_command(args: argparse.Namespace) -> int:
    from medprobe.contracts import UserError
    from medprobe.models import check_model, resolve_model

    resolve_model(args.model)  # a typo'd model folder: one line now, before the profile's modules load (seconds)
    if not args.model_kind:  # a model the Hub cannot give either: one line now too, not after those imports
        try:
            check_model(args.model)
        except UserError as err:
            raise UserError(f"{err}; {MODEL_KIND_HINT}") from None
    from medprobe.profiling.plan import ProfileOptions
    from medprobe.profiling.run import run_profile

    names = [name for name, _ in args.data_dirs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UserError(f"--data-dir {', '.join(repeated)} given more than once; give each benchmark one folder")
    options = ProfileOptions(
        model=args.model,
        out=args.out,
        benchmarks=tuple(dict.fromkeys(args.benchmarks)),
        data_dirs=dict(args.data_dirs),
        quick=args.quick,
        device=args.device,
        seed=args.seed,
        overwrite=args.overwrite,
        model_kind=args.model_kind,
    )
    profile = run_profile(options)
    return 1 if profile.failed else 0
