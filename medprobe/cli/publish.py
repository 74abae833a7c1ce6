"""`medprobe publish dataset|metric|results`: the options; the work is in medprobe/hub/publish.py (datasets,
metric Spaces, and the Hub I/O they share) and medprobe/hub/publish_results.py (results into model cards).
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
    from medprobe.hub.publish_results import publish_results

    return publish_results(args)


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
        help="a run's results JSON, or a profile folder, into a model card's eval results (model-index)",
        description=(
            "Merge a run's overall metrics into the model card's model-index; the rest of the card is kept, and a "
            "medprobe results section gives each published run's n, 95% interval, data fingerprint, medprobe version "
            "and the command that repeats it. Given a folder written by `medprobe profile`, every run of the model goes "
            "in as eval results (floor runs, failed runs and runs on a shipped sample are left out, and the plan says so) "
            "and profile.md with those runs becomes the card's knowledge-profile section, replaced on the next publish. "
            "A run on a shipped sample is refused. A run that probed a subset, that names another model than --model-repo, "
            "or whose data fingerprint is not the one the --dataset-id dataset's card states, is refused unless told."
        ),
    )
    results.add_argument("results", help="results JSON written by medprobe probe --out, or a folder written by medprobe profile")
    results.add_argument("--model-repo", required=True, help="model repo id, <org>/<model>")
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
