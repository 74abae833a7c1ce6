"""`medprobe publish dataset|metric|results|leaderboard`: the options; the work is in medprobe/hub/publish.py (datasets,
metric Spaces, and the Hub I/O they share), medprobe/hub/publish_results.py (results into model cards),
medprobe/hub/results_repo.py (results datasets) and medprobe/leaderboard/space.py (leaderboard Spaces).
Nothing heavy is imported until a command runs.
"""

from __future__ import annotations

import argparse

from medprobe.local_paths import check_local_path


def run_dataset(args: argparse.Namespace) -> int:
    check_local_path(args.folder, "", "expected a built Hub folder (medprobe build ... --out DIR)")  # before the Hub client loads
    from medprobe.hub.publish import run_publish_dataset

    return run_publish_dataset(args)


def run_metric(args: argparse.Namespace) -> int:
    from medprobe.hub.publish import run_publish_metric

    return run_publish_metric(args)


def run_results(args: argparse.Namespace) -> int:
    check_local_path(args.results, "", "give a results JSON written by medprobe probe --out, or a profile folder")
    from medprobe.contracts import UserError

    if not args.model_repo and not args.results_repo:
        raise UserError(
            "publish results needs --model-repo ORG/MODEL (a model card), --results-repo ORG/NAME (a results dataset), or both"
        )
    if args.model_repo:
        from medprobe.hub.publish_results import publish_results

        publish_results(args)
    if args.results_repo:
        from medprobe.hub.results_repo import publish_to_results_repo

        publish_to_results_repo(args)
    return 0


def run_leaderboard(args: argparse.Namespace) -> int:
    from medprobe.leaderboard.space import run_publish_leaderboard

    return run_publish_leaderboard(args)


def add_publish_command(subparsers: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dry-run", action="store_true", help="print the repo, calls and files, send nothing (no token needed)")
    common.add_argument(
        "--token", help="Hub write token (default: HF_TOKEN, then the `hf auth login` token; prefer those: argv is visible to ps)"
    )
    parser = subparsers.add_parser(
        "publish",
        help="publish a built dataset, a metric Space or run results to the Hugging Face Hub",
        description=(
            "Publish to the Hugging Face Hub after local checks. UMLS-derived datasets (medprobe_licence: umls) "
            "are published gated with the card's UMLS licence prompt; data holding credentialed text such as MedNLI "
            "or MIMIC notes (medprobe_licence: credentialed) only to a private repo. --dry-run prints exactly what would be sent."
        ),
    )
    commands = parser.add_subparsers(title="what to publish", metavar="KIND", required=True)

    dataset = commands.add_parser(
        "dataset",
        parents=[common],
        help="a built Hub folder (medprobe build ... --out DIR) to a dataset repo",
        description="Check a built folder (card YAML, every config loads, no raw licensed files), then upload it.",
    )
    dataset.add_argument("folder", help="the built folder: README.md + <config>/<split>-*.parquet")
    dataset.add_argument("--repo", required=True, help="dataset repo id, <org>/<name>")
    dataset.add_argument("--private", action="store_true", help="publish to a private repo (required for MedNLI text)")
    dataset.add_argument(
        "--raw-data",
        action="append",
        metavar="DIR",
        help="folder of raw licensed files (e.g. your MedNLI or UMLS download) whose files must not be uploaded "
        "(repeatable; ../shared/data and $MEDPROBE_SHARED_DATA are always compared when present)",
    )
    dataset.add_argument(
        "--eval-yaml",
        action="store_true",
        help="also upload the eval.yaml that declares the dataset a Hub benchmark (a task per config, test split, as "
        "`publish results` names them in .eval_results); refused while the Hub's list of evaluation frameworks does not "
        "include medprobe (docs/publishing.md)",
    )
    dataset.set_defaults(func=run_dataset)

    metric = commands.add_parser(
        "metric",
        parents=[common],
        help="an evaluate module to a gradio Space",
        description="Check a metric (evaluate.load, Space YAML), then upload it as a gradio Space with medprobe's app.",
    )
    metric.add_argument("metric", help="a shipped metric name (e.g. acc_at_k) or a metric folder")
    metric.add_argument("--repo", required=True, help="Space repo id, <org>/<name>")
    metric.add_argument("--private", action="store_true", help="create a private Space")
    metric.set_defaults(func=run_metric)

    results = commands.add_parser(
        "results",
        parents=[common],
        help="a run's results JSON, or a profile folder, into a model card's eval results and/or a results dataset",
        description=(
            "Merge a run's overall metrics into the model card's model-index; the rest of the card is kept, and a "
            "medprobe results section gives each published run's n, 95% interval, data fingerprint, medprobe version "
            "and the command that repeats it. In the same commit, each whole run's headline goes into "
            ".eval_results/medprobe_<benchmark>_<config>_<prober>.yaml (the Hub's current eval results; n and the interval "
            "in its notes), where the dataset's eval.yaml declares the run's config and split as a task. "
            "Given a folder written by `medprobe profile`, every run of the model goes "
            "in as eval results (floor runs, failed runs and runs on a shipped sample are left out, and the plan says so) "
            "and profile.md with those runs becomes the card's knowledge-profile section, replaced on the next publish. "
            "With --results-repo, each run's results JSON and outcomes go into a results dataset instead or as well. "
            "A run on a shipped sample is refused. A run that probed a subset, that names another model than --model-repo, "
            "or whose data fingerprint is not the one the --dataset-id dataset's card states, is refused unless told."
        ),
    )
    results.add_argument("results", help="results JSON written by medprobe probe --out, or a folder written by medprobe profile")
    results.add_argument("--model-repo", help="model repo id, <org>/<model>: merge the results into its card")
    results.add_argument(
        "--results-repo",
        metavar="ORG/NAME",
        help="a results dataset repo: each run's results JSON and per-item outcomes (Parquet), so that anyone can pair "
        "their run with it (`medprobe compare ... hub:ORG/NAME/<model>/<benchmark>/<config>/<prober>`) and build a "
        "leaderboard from it; load_dataset(ORG/NAME, '<benchmark>_<config>') reads a split per model",
    )
    results.add_argument(
        "--model-name",
        metavar="NAME",
        help="--results-repo: the model's folder and split name (letters, digits, _; default: its Hub id as org__name, "
        "or its folder's or packaged name)",
    )
    results.add_argument(
        "--predictions",
        action="store_true",
        help="--results-repo: also upload each run's predictions file; those holding licensed text (MedLAMA's UMLS "
        "names) only into a gated repo (--gated)",
    )
    results.add_argument(
        "--gated", action="store_true", help="--results-repo: gate the repo (manual approval, UMLS licence prompt)"
    )
    results.add_argument("--private", action="store_true", help="--results-repo: a private repo")
    results.add_argument(
        "--dataset-id",
        action="append",
        metavar="[BENCHMARK=]ORG/NAME",
        help="Hub id of the benchmark dataset (default: the run's --dataset, if a Hub id); for a profile, one per "
        "benchmark as BENCHMARK=ORG/NAME (repeatable)",
    )
    results.add_argument("--metric", action="append", help="publish only this metric (repeatable; default: all overall metrics)")
    results.add_argument("--task-type", help="model-index task type (default: the benchmark card's first task category)")
    results.add_argument("--source-url", help="link shown as the results' source (e.g. the run's logs)")
    results.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing (others' models)")
    results.add_argument(
        "--allow-subset",
        action="store_true",
        help="publish a run that probed a subset (--per-relation, --diseases, a profile --quick), labelled 'subset: ...' "
        "in the model-index dataset name and the card (refused without it)",
    )
    results.add_argument(
        "--model-mismatch-ok",
        action="store_true",
        help="skip the model check: by default a run that loaded another Hub model, or recorded no weights hash, is "
        "refused, and a real publish compares the run's weight files (size, sha256) with the repo's",
    )
    results.add_argument(
        "--dataset-mismatch-ok",
        action="store_true",
        help="skip the data check: by default a real publish compares the run's data fingerprint with the sha256 of the "
        "data files that the --dataset-id dataset's card states (its medprobe_build record), and refuses a difference",
    )
    results.set_defaults(func=run_results)

    board = commands.add_parser(
        "leaderboard",
        parents=[common],
        help="a Space that builds the leaderboard of a results repo at start and on request",
        description=(
            "Upload a gradio Space (medprobe's shared leaderboard app, space.json naming the results repo, requirements.txt, "
            "its card) that builds `medprobe leaderboard hub:ORG/NAME` when it starts and on request (its button, or POST "
            "/rebuild) and serves those pages. A real publish first builds the board here from the results repo."
        ),
    )
    board.add_argument(
        "--results-repo", required=True, metavar="ORG/NAME", help="the results dataset (publish results --results-repo)"
    )
    board.add_argument("--space", required=True, metavar="ORG/SPACE", help="the Space repo id")
    board.add_argument("--title", help="the board's title (default: medprobe leaderboard: ORG/NAME)")
    board.add_argument("--include-samples", action="store_true", help="rank runs on shipped samples on boards of their own")
    board.add_argument("--private", action="store_true", help="create a private Space")
    board.set_defaults(func=run_leaderboard)
