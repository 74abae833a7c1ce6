"""`medprobe publish results`: a run's results JSON, or a `medprobe profile` folder, into a model card.

Before anything is sent (and under --dry-run too) a run is refused, with one line naming it and the
flag that overrides, when
- it read a sample shipped with medprobe (medprobe/hub/data_check.py: recognised by its files' sha256), whatever
  --dataset-id says (no override: the sample is not the benchmark),
- it probed a subset of its benchmark (medprobe/hub/subsets.py; --allow-subset publishes it with
  "subset: ..." in the model-index dataset name and in the card text, under its own model-index config
  `<config>/subset:<option>=<value>`), or
- it names another model than --model-repo, recorded no weights hash to compare, or loaded weight files that
  --model-repo is known offline to hold with other bytes (a packaged model's repo, the local Hub cache)
  (medprobe/hub/model_match.py; --model-mismatch-ok), or
- it read its data from another Hub dataset than --dataset-id (medprobe/hub/data_check.py; --dataset-mismatch-ok).
A real publish then reads the repo's file metadata and checks that it holds the weights probed, reads
the --dataset-id dataset's card and checks that its medprobe_build record gives the run's data fingerprint,
reads the card at the repo's head, merges the eval results into its model-index and writes the
card text (medprobe/hub/card_sections.py: each run's n, 95% interval, data fingerprint, medprobe
version and the command that repeats it), and commits on top of that head.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import CommitOperationAdd, HfApi, constants
from huggingface_hub.errors import RepositoryNotFoundError

from medprobe.hub.checks import PublishError
from medprobe.hub.publish import (
    REPO_ID,
    check_repo_id,
    download_text,
    hub_api,
    hub_errors,
    load_profile,
    require_token,
    token_status,
)


def results_dataset_id(explicit: str | None, run_dataset: str, benchmark: str | None = None) -> str:
    """The Hub id of the benchmark: --dataset-id, else the run's --dataset when that was a Hub id."""
    if explicit:
        return check_repo_id(explicit, "--dataset-id")
    if Path(run_dataset).exists() or not REPO_ID.match(run_dataset):
        named = f"{benchmark}=" if benchmark else ""
        raise PublishError(
            f"the run read the local dataset {run_dataset!r}: name its Hub id with --dataset-id {named}<org>/<name>, "
            "so that the model card links to the published dataset"
        )
    return run_dataset


def parse_dataset_ids(values: list[str] | None) -> tuple[str | None, dict[str, str]]:
    """(a plain id, {benchmark: id}) from --dataset-id values `<org>/<name>` or `<benchmark>=<org>/<name>`."""
    plain = [value for value in values or [] if "=" not in value]
    named = dict(value.split("=", 1) for value in values or [] if "=" in value)
    if len(plain) > 1:
        raise PublishError(f"--dataset-id given {len(plain)} times without a benchmark: use <benchmark>=<org>/<name> for each")
    return (plain[0] if plain else None), named


def subset_line(subsets: list[str]) -> str:
    if not subsets:
        return "  subset:  none: every run probed its whole config/split"
    return f"  subset:  {'; '.join(dict.fromkeys(subsets))} (published labelled as a subset: --allow-subset)"


def repeat_lines(record: Any, dataset_id: str, repo_id: str, label: str = "") -> list[str]:
    """The command that was run, as the record has it, then its form in the card (the Hub dataset and model, files
    by name): the plan never shows a command that was not run as if it had been."""
    from medprobe.hub.card_sections import public_command

    if not record.command:
        return [f"  repeat:  {label}not recorded (a results file of a medprobe before 0.2)"]
    return [
        f"  repeat:  {label}{record.command}",
        f"           (the command that was run); in the card, on the Hub: {public_command(record.command, dataset_id, repo_id)}",
    ]


def card_calls(
    repo_id: str, args: argparse.Namespace, what: str, dataset_ids: list[str], entries: list | None = None
) -> list[str]:
    """The plan's Hub calls of a card publish; model_info also fetches the file metadata of the weights check, the
    cards of `dataset_ids` are read for the data check, and the eval.yaml of each dataset of `entries`
    (medprobe.hub.eval_entries.EntryFile) for the tasks it declares."""
    checked = not args.model_mismatch_ok
    metadata = ", files_metadata=True" if checked else ""
    purpose = ", and its files' sizes and sha256 for the weights check" if checked else ""
    calls = [
        f"model_info(repo_id={repo_id!r}{metadata}): the current commit (the new one must follow it){purpose}",
        *(
            f"hf_hub_download(repo_id={dataset_id!r}, repo_type='dataset', filename='README.md'): the dataset card, whose "
            "medprobe_build record states the sha256 of its data files"
            for dataset_id in dataset_ids
        ),
        *(
            f"hf_hub_download(repo_id={dataset_id!r}, repo_type='dataset', filename='eval.yaml'): the tasks the benchmark "
            "declares (an .eval_results entry of another task is not written)"
            for dataset_id in dict.fromkeys(found.entry.dataset_id for found in entries or [])
        ),
        f"hf_hub_download(repo_id={repo_id!r}, filename='README.md'): the card at that commit, kept and merged",
        f"create_commit(repo_id={repo_id!r}, operations={['README.md', *(found.path for found in entries or [])]}, "
        f"create_pr={args.create_pr}): {what}",
    ]
    return ["  calls:", *(f"    {number}. {call}" for number, call in enumerate(calls, 1))]


def publish_results(args: argparse.Namespace) -> int:
    from medprobe.hub import data_check
    from medprobe.hub.card_sections import run_block, with_results_section
    from medprobe.hub.data_check import ProbedData, refuse_sample
    from medprobe.hub.eval_entries import FOLDER, entry_files
    from medprobe.hub.eval_entries import plan_lines as entry_plan_lines
    from medprobe.hub.eval_results import dataset_label, eval_results_for, merge_into_card, model_index_yaml
    from medprobe.hub.model_match import Probed, check_offline, plan_lines
    from medprobe.hub.subsets import refuse_subsets, subset_config, subset_phrase
    from medprobe.records import load_run

    if Path(args.results).is_dir():
        return publish_profile(args)
    repo_id = check_repo_id(args.model_repo, "--model-repo")
    record = load_run(args.results).record  # every number recomputed from its outcomes, or refused
    refuse_sample(args.results, record)  # whatever --dataset-id says
    subset = subset_phrase(record)
    refuse_subsets([(args.results, subset)] if subset else [], args.allow_subset)
    probed = [Probed(args.results, record.model_identity or {})]
    check_offline(probed, repo_id, args.model_mismatch_ok)
    plain, named = parse_dataset_ids(args.dataset_id)
    dataset_id = results_dataset_id(named.get(record.benchmark, plain), record.dataset)
    data = [ProbedData(args.results, record, dataset_id)]
    data_check.check_offline(data, args.dataset_mismatch_ok)
    config = subset_config(record)
    results = eval_results_for(
        record,
        dataset_id,
        metrics=args.metric,
        task_type=args.task_type,
        source_url=args.source_url,
        subset=subset,
        config=config,
    )
    block = run_block(record, dataset_label(record, subset), dataset_id, repo_id, [r.metric_type for r in results], subset)
    block = with_review(block, args.results)
    model_name = repo_id.split("/")[1]
    entries, left_out = entry_files([(record, dataset_id, args.results, subset)], repo_id, args)
    what = f"{len(results)} eval result(s) merged into its model-index, the run's block in its medprobe results section" + (
        f", {len(entries)} {FOLDER} file(s)" if entries else ""
    )
    lines = [
        "medprobe publish results",
        f"  repo:    {repo_id} (model) -> {constants.ENDPOINT}/{repo_id}",
        f"  token:   {token_status(args.token)}",
        subset_line([subset] if subset else []),
        *plan_lines(probed, repo_id, args.model_mismatch_ok),
        *data_check.plan_lines(data, args.dataset_mismatch_ok),
        *repeat_lines(record, dataset_id, repo_id),
        *card_calls(repo_id, args, what, data_check.dataset_ids_to_read(data, args.dataset_mismatch_ok), entries),
        f"  eval results ({dataset_id}, {f'config {config}' if config else 'the default config'}, split {record.split}, "
        f"prober {record.prober}):",
        *("    " + line for line in model_index_yaml(results, model_name).splitlines()),
        *entry_plan_lines(entries, left_out),
        "  card text (its block in the medprobe results section):",
        *("    " + line for line in block.splitlines()),
    ]
    print("\n".join(lines))
    if args.dry_run:
        print("dry run: nothing was sent")
        return 0

    def make_card(existing: str | None):
        return with_results_section(merge_into_card(existing, results, model_name, dataset_id), [block])

    message = f"Add {record.benchmark} eval results ({record.prober}) with medprobe"
    url = commit_card(args, repo_id, message, make_card, None if args.model_mismatch_ok else probed, data, entries)
    print(f"published {len(results)} eval result(s) to {url}")
    return 0


def with_review(block: str, results: str) -> str:
    """The run's card block, plus one line of expert figures when a review lies beside its results JSON."""
    from medprobe.review.report import review_line

    line = review_line(results)
    return f"{block}\n- {line}" if line else block


def commit_card(
    args: argparse.Namespace,
    repo_id: str,
    message: str,
    make_card,
    probed: list | None = None,
    data: list | None = None,
    entries: list | None = None,
) -> str:
    """Read the model card at the repo's head, commit `make_card(existing text or None)` on top of it;
    with `probed` (model_match.Probed), first check that the repo holds the weights that were probed, and with
    `data` (data_check.ProbedData), that each run read the data its Hub dataset's card states; `entries`
    (eval_entries.EntryFile) go into the same commit where their dataset's eval.yaml declares their task."""
    from medprobe.hub import data_check
    from medprobe.hub.eval_entries import declared, operations, read_eval_yaml
    from medprobe.hub.model_match import check_repo

    token = require_token(args.token)
    api = hub_api(token)
    with hub_errors(token, repo_id):
        try:
            info = api.model_info(repo_id, files_metadata=probed is not None)
        except RepositoryNotFoundError:
            raise PublishError(
                f"publish to {repo_id} failed: no such model repo (or the token cannot see it) — check --model-repo, "
                "push the model first, and check the token's account with `hf auth whoami`"
            ) from None
        if probed is not None:
            print(check_repo(probed, repo_id, info))
        if data and not args.dataset_mismatch_ok:
            read = data_check.dataset_ids_to_read(data, args.dataset_mismatch_ok)
            print(data_check.check_hub(data, {dataset_id: download_dataset_card(api, dataset_id) for dataset_id in read}))
        eval_yamls = {dataset_id: read_eval_yaml(api, dataset_id) for dataset_id in {f.entry.dataset_id for f in entries or []}}
        kept, notes = declared(entries or [], eval_yamls)
        for note in notes:
            print(f"medprobe: {note}")
        card = make_card(download_card(api, repo_id, info.sha))
        commit = api.create_commit(
            repo_id,
            operations=[CommitOperationAdd("README.md", str(card).encode("utf-8")), *operations(kept)],
            commit_message=message,
            parent_commit=info.sha,  # the Hub refuses the commit if the card changed since we read it
            create_pr=args.create_pr,
        )
    return commit.pr_url or commit.commit_url


def download_card(api: HfApi, repo_id: str, revision: str | None, repo_type: str = "model") -> str | None:
    """The repo's README.md at `revision`, or None when it has none."""
    return download_text(api, repo_id, "README.md", revision, repo_type)


def download_dataset_card(api: HfApi, dataset_id: str) -> str | None:
    """The Hub dataset's card at its head (None without one), for the data check."""
    from medprobe.hub.data_check import DATASET_MISMATCH_OK

    try:
        return download_card(api, dataset_id, None, repo_type="dataset")
    except RepositoryNotFoundError:
        raise PublishError(
            f"--dataset-id {dataset_id}: no such dataset repo (or the token cannot see it), so nothing shows the run probed "
            f"it; publish the dataset first (`medprobe publish dataset FOLDER --repo {dataset_id}`), or pass "
            f"{DATASET_MISMATCH_OK}"
        ) from None


# --- a profile folder ----------------------------------------------------------------------------------


@dataclass
class ProfileRun:
    """A run of a profile that goes into the card, with what it probed and where it is published."""

    label: str
    record: Any  # medprobe.records.record.RunRecord
    subset: str | None
    config: str | None = None  # the model-index config (medprobe.hub.subsets.subset_config)
    dataset_id: str = ""
    metrics: list[str] = field(default_factory=list)


def publishable_runs(profile: dict, loaded: dict, args: argparse.Namespace) -> tuple[list[ProfileRun], list[str]]:
    """(the runs of the model that go into the card, notes on the runs left out and why); `loaded`: label ->
    the run read through medprobe.records (hub.publish.load_profile)."""
    from medprobe.hub.data_check import sample_read, sample_words
    from medprobe.hub.subsets import subset_config, subset_phrase

    settings = profile.get("settings") or {}
    quick = (settings.get("quick_settings") or {}) if settings.get("quick") else None
    runs, notes = [], []
    for run in profile["runs"]:
        label, benchmark = run.get("label"), run.get("benchmark")
        source = profile["data"].get(benchmark) or {}
        if run.get("record") is None:
            notes.append(f"{label}: left out, the run failed")
        elif run.get("floor_of"):
            notes.append(f"{label}: left out, a floor (random weights), not a result of this model")
        elif source.get("sample"):
            notes.append(f"{label}: left out, its data is a shipped sample, not the benchmark ({source.get('source')})")
        elif sample := sample_read(loaded[label].record):  # a copy of a sample, whatever profile.json says of it
            notes.append(
                f"{label}: left out, its data is {sample_words(sample[0])} ({sample[1]} has the bytes of its {sample[2]})"
            )
        else:
            record = loaded[label].record
            if args.metric and not any(name in record.metrics for name in args.metric):
                notes.append(f"{label}: left out, it has none of --metric {', '.join(args.metric)}")
                continue
            # profile.json keeps the --quick settings per task (medprobe.profiling.plan.quick_settings)
            task_quick = None if quick is None else quick.get(record.task or benchmark, {})
            runs.append(ProfileRun(label, record, subset_phrase(record, task_quick), subset_config(record, task_quick)))
    return runs, notes


def profile_results(runs: list[ProfileRun], args: argparse.Namespace) -> tuple[list, list[str]]:
    """(eval results of every run, the dataset ids); each run's dataset id and metrics are filled in."""
    from medprobe.hub.eval_results import eval_results_for

    plain, named = parse_dataset_ids(args.dataset_id)
    if plain:
        raise PublishError(
            f"--dataset-id {plain}: a profile covers several benchmarks; name each, e.g. --dataset-id "
            f"{runs[0].record.benchmark if runs else 'NAME'}={plain}"
        )
    unnamed = {}
    for run in runs:
        explicit, dataset = named.get(run.record.benchmark), run.record.dataset
        if not explicit and (Path(dataset).exists() or not REPO_ID.match(dataset)):
            unnamed.setdefault(run.record.benchmark, dataset)
    if unnamed:
        flags = " ".join(f"--dataset-id {name}=<org>/<name>" for name in unnamed)
        raise PublishError(
            f"the profile's runs read local datasets ({', '.join(f'{n}: {p}' for n, p in unnamed.items())}): "
            f"name their Hub ids with {flags}, so that the model card links to the published datasets"
        )
    results = []
    for run in runs:
        run.dataset_id = results_dataset_id(named.get(run.record.benchmark), run.record.dataset, run.record.benchmark)
        wanted = [name for name in args.metric or [] if name in run.record.metrics] or None
        found = eval_results_for(
            run.record,
            run.dataset_id,
            metrics=wanted,
            task_type=args.task_type,
            source_url=args.source_url,
            subset=run.subset,
            config=run.config,
        )
        run.metrics = [result.metric_type for result in found]
        results += found
    if args.metric and not results:
        raise PublishError(f"--metric {', '.join(args.metric)}: in none of the profile's runs")
    return results, list(dict.fromkeys(run.dataset_id for run in runs))


def publish_profile(args: argparse.Namespace) -> int:
    """A `medprobe profile` folder: every run of the model as eval results, profile.md and a block per run as a card section."""
    from medprobe.hub import data_check
    from medprobe.hub.card_sections import run_block, with_profile_section
    from medprobe.hub.data_check import ProbedData
    from medprobe.hub.eval_entries import FOLDER, entry_files
    from medprobe.hub.eval_entries import plan_lines as entry_plan_lines
    from medprobe.hub.eval_results import dataset_label, merge_into_card, model_index_yaml
    from medprobe.hub.model_match import Probed, check_offline, plan_lines
    from medprobe.hub.subsets import refuse_subsets

    repo_id = check_repo_id(args.model_repo, "--model-repo")
    folder = Path(args.results)
    profile, table, loaded = load_profile(folder)
    runs, notes = publishable_runs(profile, loaded, args)
    name = folder / "profile.json"
    refuse_subsets([(f"{name} run {run.label}", run.subset) for run in runs if run.subset], args.allow_subset)
    probed = [Probed(f"{name} run {run.label}", run.record.model_identity or {}) for run in runs]
    check_offline(probed, repo_id, args.model_mismatch_ok)
    results, dataset_ids = profile_results(runs, args)
    data = [ProbedData(f"{name} run {run.label}", run.record, run.dataset_id) for run in runs]
    data_check.check_offline(data, args.dataset_mismatch_ok)
    blocks = [
        run_block(run.record, dataset_label(run.record, run.subset), run.dataset_id, repo_id, run.metrics, run.subset)
        for run in runs
    ]
    model_name = repo_id.split("/")[1]
    entries, left_out = entry_files(
        [(run.record, run.dataset_id, f"{name} run {run.label}", run.subset) for run in runs], repo_id, args
    )
    what = (
        f"{len(results)} eval result(s) merged into its model-index, profile.md ({len(table.splitlines())} lines) and a "
        f"block per run ({len(blocks)}) as its knowledge-profile section"
        + (f", {len(entries)} {FOLDER} file(s)" if entries else "")
    )
    lines = [
        "medprobe publish results (a profile)",
        f"  profile: {folder} (model {profile.get('model')}, {len(profile['runs'])} run(s))",
        f"  repo:    {repo_id} (model) -> {constants.ENDPOINT}/{repo_id}",
        f"  token:   {token_status(args.token)}",
        subset_line([run.subset for run in runs if run.subset]),
        *(plan_lines(probed, repo_id, args.model_mismatch_ok) if probed else []),
        *data_check.plan_lines(data, args.dataset_mismatch_ok),
        *(line for run in runs for line in repeat_lines(run.record, run.dataset_id, repo_id, f"{run.label}: ")),
        *card_calls(repo_id, args, what, data_check.dataset_ids_to_read(data, args.dataset_mismatch_ok), entries),
        *(f"  note: {note}" for note in notes),
        "  eval results:",
        *("    " + line for line in (model_index_yaml(results, model_name).splitlines() if results else ["(none)"])),
        *entry_plan_lines(entries, left_out),
        "  card text (the blocks of the runs, after profile.md):",
        *("    " + line for block in blocks for line in [*block.splitlines(), ""]),
    ]
    print("\n".join(lines))
    if args.dry_run:
        print("dry run: nothing was sent")
        return 0

    def make_card(existing: str | None):
        return with_profile_section(merge_into_card(existing, results, model_name, dataset_ids), table, blocks)

    message = f"Add the medprobe knowledge profile ({len(results)} eval results)"
    url = commit_card(args, repo_id, message, make_card, None if args.model_mismatch_ok or not probed else probed, data, entries)
    print(f"published the knowledge profile and {len(results)} eval result(s) to {url}")
    return 0
