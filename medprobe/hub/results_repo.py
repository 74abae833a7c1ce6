"""`medprobe publish results RUN_OR_PROFILE --results-repo ORG/NAME`: runs into a results dataset on the Hub.

    <model>/<benchmark>/<config>/<prober>/results.json        the results JSON, as written
    <model>/<benchmark>/<config>/<prober>/outcomes.parquet    its per-item outcomes (medprobe.hub.published)
    <model>/<benchmark>/<config>/<prober>/<predictions>       with --predictions, and only in a gated or private repo
    medprobe_runs.json                                         the repo's index of its runs
    README.md                                                  the card: `configs:` and a table of the runs

The card's `configs:` make `load_dataset("ORG/NAME", "<benchmark>_<config>")` read one split per model
(the split is the model's name): the outcomes of that model's latest run of each prober, with a
`prober` column (lighteval and lm-evaluation-harness name a config per model and task and a split per
run time; here a config is a benchmark's config, so one call reads every model on it side by side,
and the repo's git history keeps the earlier runs). Split and folder names keep `\\w` characters only
(the Hub's rule for split names); `--model-name` chooses the model's.

Before anything is sent (and under --dry-run too), every run passes medprobe.records (its numbers
recomputed from its outcomes), and is refused as for a model card (medprobe.hub.publish_results): a run
on a shipped sample, a subset (unless --allow-subset: its config folder then says so), a model other
than --model-repo or without a weights hash (unless --model-mismatch-ok). Its outcomes must come back
from their Parquet file byte for byte. Predictions of a benchmark whose card is not open (MedLAMA's
top-k are UMLS names) go only into a gated repo (--gated) and credentialed data's only into a private
one; outcomes (ids, item digests, groups, ranks) hold no licensed text. A real publish reads the repo's
index at its head, refuses to replace a run of another model or other settings at the same path, and
commits every file on top of that head in one commit.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from medprobe.hub.checks import PublishError
from medprobe.hub.official import DataStatus, data_status
from medprobe.hub.published import MANIFEST, OUTCOMES, RESULTS, name_part, outcomes_parquet, run_folder

RESULTS_REPO = "--results-repo"
GATED_PROMPT = (
    "The predictions in this repo hold names from the UMLS Metathesaurus (licensed text). Confirm that you hold a "
    "current UMLS Metathesaurus License from the U.S. National Library of Medicine and will use them under its terms."
)


@dataclass
class RepoRun:
    """A run as it goes into the results repo: the checked run, its folder there and the bytes of its files."""

    what: str  # the results file, or a run of a profile
    loaded: Any  # medprobe.records.LoadedRun
    folder: str  # <model>/<benchmark>/<config>/<prober>
    config: str  # the dataset config `<benchmark>_<config>`
    split: str  # the model's split
    status: DataStatus
    subset: str | None
    files: dict[str, bytes] = field(default_factory=dict)  # path in the repo -> bytes

    @property
    def record(self) -> Any:
        return self.loaded.record


def model_name(record: Any, explicit: str | None) -> str:
    """The model's folder and split name: --model-name, else the Hub id (org__name), a local folder's name or the name given."""
    if explicit:
        return name_part(explicit)
    identity = record.model_identity or {}
    if identity.get("hub_id"):
        return name_part(identity["hub_id"].replace("/", "__"))
    model = record.model or "model"
    return name_part(Path(model).name if ("/" in model or "\\" in model) else model)


def predictions_licence(benchmark: str) -> str:
    """The `medprobe_licence` of the benchmark's card template: open, umls, credentialed (or unknown)."""
    from medprobe.resources import card_template

    try:
        text = card_template(f"{benchmark}.md").read_text(encoding="utf-8")
        header = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else {}
    except (FileNotFoundError, yaml.YAMLError, IndexError):
        return "unknown"
    licence = (header or {}).get("medprobe_licence")
    return licence if licence in ("open", "umls", "credentialed") else "unknown"


def prediction_files(loaded: Any) -> list[Path]:
    """The predictions files a run wrote with its results JSON (named in its `files`), present beside it."""
    outcomes = (loaded.record.outcomes or {}).get("file")
    found = []
    for name in loaded.record.files:
        path = loaded.path.parent / name
        if name != outcomes and path.suffix == ".jsonl" and path.is_file():
            found.append(path)
    return found


def check_predictions(runs: list[RepoRun], args: argparse.Namespace) -> list[str]:
    """Predictions go only where their licence allows: refused otherwise; the plan's lines about them."""
    if not args.predictions:
        return ["  predictions: not uploaded (the outcomes hold ids, item digests, groups and ranks: no licensed text)"]
    lines = []
    for run in runs:
        licence = predictions_licence(run.record.benchmark)
        if licence == "credentialed" and not args.private:
            raise PublishError(
                f"{run.what}: the predictions of {run.record.benchmark} hold credentialed text (MedNLI, MIMIC): they go "
                "only into a private repo (--private), or leave out --predictions"
            )
        if licence != "open" and not (args.gated or args.private):
            raise PublishError(
                f"{run.what}: the predictions of {run.record.benchmark} hold licensed text ({licence}: e.g. UMLS names); "
                f"they go only into a gated repo: pass --gated (manual approval with the licence prompt), or leave out --predictions"
            )
        found = prediction_files(run.loaded)
        for path in found:
            run.files[f"{run.folder}/{path.name}"] = path.read_bytes()
        where = "gated repo" if licence != "open" else "open data"
        lines.append(f"  predictions: {run.what}: {', '.join(p.name for p in found) or 'none written'} ({licence}: {where})")
    return lines


def parquet_checked(run: RepoRun) -> bytes:
    """The run's outcomes as Parquet, refused unless they come back as the outcomes file its record hashes."""
    from medprobe.digests import sha256_text
    from medprobe.hub.published import outcomes_from_parquet
    from medprobe.records.outcomes import outcomes_jsonl

    data = outcomes_parquet(run.loaded.outcomes, run.record.prober)
    back, _ = outcomes_from_parquet(data, run.what)
    if sha256_text(outcomes_jsonl(back)) != (run.record.outcomes or {}).get("sha256"):
        raise PublishError(
            f"{run.what}: its outcomes do not come back from Parquet as the file its record hashes (written by another "
            "medprobe?); run the probe again with this medprobe to publish it"
        )
    return data


# --- which runs ---------------------------------------------------------------------------------------


def runs_to_publish(args: argparse.Namespace) -> tuple[list[tuple[str, Any, str | None]], list[str], str | None]:
    """([(what, loaded run, subset phrase)], notes on runs left out, the profile's model or None) of RUN_OR_PROFILE,
    each refused as for a model card."""
    from medprobe.hub.data_check import refuse_sample
    from medprobe.hub.publish import load_profile
    from medprobe.hub.publish_results import publishable_runs
    from medprobe.hub.subsets import refuse_subsets, subset_phrase
    from medprobe.records import load_run

    path = Path(args.results)
    if not path.is_dir():
        loaded = load_run(path)  # every number recomputed from its outcomes, or refused
        refuse_sample(args.results, loaded.record)
        subset = subset_phrase(loaded.record)
        refuse_subsets([(args.results, subset)] if subset else [], args.allow_subset)
        return [(args.results, loaded, subset)], [], None
    profile, _, loaded = load_profile(path)
    runs, notes = publishable_runs(profile, loaded, argparse.Namespace(**{**vars(args), "metric": None}))
    name = path / "profile.json"
    refuse_subsets([(f"{name} run {run.label}", run.subset) for run in runs if run.subset], args.allow_subset)
    return [(f"{name} run {run.label}", loaded[run.label], run.subset) for run in runs], notes, profile.get("model")


def check_models(runs: list[RepoRun], args: argparse.Namespace) -> list[str]:
    """The model check of a model card when --model-repo is given; else each run must record its weights' hash, which
    is what tells models apart in the repo. Returns the plan's lines."""
    from medprobe.hub.model_match import MISMATCH_OK, Probed, check_offline, plan_lines

    probed = [Probed(run.what, run.record.model_identity or {}) for run in runs]
    if args.model_repo:
        check_offline(probed, args.model_repo, args.model_mismatch_ok)
        return plan_lines(probed, args.model_repo, args.model_mismatch_ok)
    if not args.model_mismatch_ok:
        for item in probed:
            if not item.identity.get("weights_sha256"):
                raise PublishError(
                    f"{item.what} records no weights hash of its model, so nothing in the results repo tells which model "
                    f"it was: run the probe again with this medprobe, or pass {MISMATCH_OK}"
                )
    return [f"  model:   {item.what}: {item.describe()}" for item in probed]


def repo_runs(args: argparse.Namespace) -> tuple[list[RepoRun], list[str]]:
    """The runs with their folders and files, every check passed; (runs, notes)."""
    from medprobe.hub.subsets import subset_config

    found, notes, profile_model = runs_to_publish(args)
    if not found:
        raise PublishError(f"{args.results}: no run to publish ({'; '.join(notes) or 'the profile holds none'})")
    runs = []
    for what, loaded, subset in found:
        record = loaded.record
        name = model_name(record, args.model_name or (Path(profile_model).name if profile_model else None))
        config = name_part(subset_config(record) or "all") if subset else None  # a subset's folder says so
        folder = run_folder(name, record, config)
        dataset_config = name_part(f"{record.benchmark}_{config or record.config or 'all'}")
        runs.append(RepoRun(what, loaded, folder, dataset_config, name, data_status(record), subset))
    taken: dict[str, str] = {}
    for run in runs:
        if run.folder in taken:
            raise PublishError(f"{run.what} and {taken[run.folder]} would both go to {run.folder}; publish them one at a time")
        taken[run.folder] = run.what
        run.files[f"{run.folder}/{RESULTS}"] = run.loaded.path.read_bytes()
        run.files[f"{run.folder}/{OUTCOMES}"] = parquet_checked(run)
    return runs, notes


# --- the index and the card ---------------------------------------------------------------------------


def settings_key(record: Any) -> str:
    return json.dumps(record.settings, sort_keys=True, default=str)


def manifest_entry(run: RepoRun) -> dict:
    """What the repo's index says of a run (enough to draw the card and to tell a rerun from another model)."""
    from medprobe.registry import task_entry

    record = run.record
    headline = task_entry(record.task).headline if record.task else None  # a loaded run's task is installed
    metric = headline if headline in record.metrics else next(iter(record.metrics), None)
    interval = (record.intervals or {}).get(metric) or {}
    return {
        "model": run.split,
        "model_id": (record.model_identity or {}).get("hub_id") or record.model,
        "weights_sha256": (record.model_identity or {}).get("weights_sha256"),
        "benchmark": record.benchmark,
        "config": record.config,
        "dataset_config": run.config,
        "split": record.split,
        "prober": record.prober,
        "task": record.task,
        "settings": json.loads(settings_key(record)),
        "subset": run.subset,
        "data": {"kind": run.status.kind, "text": run.status.text, "fingerprint": run.status.fingerprint},
        "headline": {
            "metric": metric,
            "value": record.metrics.get(metric),
            "low": interval.get("low"),
            "high": interval.get("high"),
            "n": interval.get("n", len(run.loaded.outcomes)),
        },
        "files": sorted(path.rsplit("/", 1)[1] for path in run.files),
        "created": record.created,
    }


def merged_manifest(existing: dict, runs: list[RepoRun], when: str) -> dict:
    from medprobe import __version__

    entries = dict((existing or {}).get("runs") or {})
    for run in runs:
        entries[run.folder] = {**manifest_entry(run), "published": when}
    return {"medprobe": __version__, "runs": dict(sorted(entries.items()))}


def check_replacements(existing: dict, runs: list[RepoRun]) -> list[str]:
    """Refuse to replace a run of another model or other settings; the runs replaced, in words."""
    replaced = []
    for run in runs:
        old = ((existing or {}).get("runs") or {}).get(run.folder)
        if not old:
            continue
        new = manifest_entry(run)
        differ = [key for key in ("weights_sha256", "settings", "split", "config") if old.get(key) != new.get(key)]
        if differ:
            raise PublishError(
                f"the results repo already holds a run of another model or other settings at {run.folder} ({', '.join(differ)} "
                f"differ): name this one with --model-name (e.g. {run.split}_2), or publish to another repo"
            )
        replaced.append(f"{run.folder} (published {old.get('published', '?')}): a newer run of the same model and settings")
    return replaced


def card_configs(manifest: dict) -> list[dict]:
    """The card's `configs:`: one per `<benchmark>_<config>`, one split per model reading its runs' Parquet files."""
    configs: dict[str, dict[str, str]] = {}
    for path, entry in manifest.get("runs", {}).items():
        model, rest = path.split("/", 1)
        configs.setdefault(entry["dataset_config"], {})[model] = f"{model}/{rest.rsplit('/', 1)[0]}/*/{OUTCOMES}"
    found = []
    for index, (name, splits) in enumerate(sorted(configs.items())):
        config: dict = {
            "config_name": name,
            "data_files": [{"split": split, "path": path} for split, path in sorted(splits.items())],
        }
        if index == 0:
            config["default"] = True  # a bare load_dataset(repo) needs one
        found.append(config)
    return found


def percent(value: Any) -> str:
    return "—" if not isinstance(value, (int, float)) else f"{100 * value:.2f}"


def card_text(repo_id: str, manifest: dict, gated: bool) -> str:
    """The results repo's card: `configs:` YAML, how to load and compare, and a table of its runs."""
    meta: dict = {"pretty_name": f"medprobe results ({repo_id})", "tags": ["medprobe", "evaluation", "biomedical"]}
    if gated:
        meta.update(
            extra_gated_heading="Access the predictions (UMLS-derived)",
            extra_gated_prompt=GATED_PROMPT,
            extra_gated_fields={"I hold a current UMLS Metathesaurus License": "checkbox"},
        )
    meta["configs"] = card_configs(manifest)
    rows = []
    for path, entry in manifest.get("runs", {}).items():
        head = entry.get("headline") or {}
        interval = f"[{percent(head.get('low'))}, {percent(head.get('high'))}]"
        rows.append(
            f"| {entry['model']} | {entry['dataset_config']} | {entry['prober']} | {head.get('metric')} | "
            f"{percent(head.get('value'))} {interval} | {head.get('n')} | {entry['data']['text']} | `hub:{repo_id}/{path}` |"
        )
    first = (
        meta["configs"][0] if meta["configs"] else {"config_name": "<benchmark>_<config>", "data_files": [{"split": "<model>"}]}
    )
    lines = [
        f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---",
        "",
        f"# medprobe results: {repo_id}",
        "",
        "Per-item outcomes of medprobe runs: one folder per run "
        "(`<model>/<benchmark>/<config>/<prober>/`) with its results JSON and its outcomes as Parquet (item id, item content "
        "digest, group, outcome columns, prober). A config per benchmark config, a split per model (its latest run of each "
        "prober); the repo's history keeps earlier runs.",
        "",
        "```python",
        "from datasets import load_dataset",
        f'outcomes = load_dataset("{repo_id}", "{first["config_name"]}", split="{first["data_files"][0]["split"]}")',
        "```",
        "",
        "Pair your run with a published one item by item (`medprobe compare` downloads the run, checks every number "
        "against its outcomes and pairs on item ids and content digests), or build the leaderboard from the whole repo:",
        "",
        "```bash",
        f"medprobe compare my_run.json hub:{repo_id}/<model>/<benchmark>/<config>/<prober>",
        f"medprobe leaderboard hub:{repo_id} --out site",
        "```",
        "",
        "| model | config | prober | metric | value [95% interval] | n | data | run |",
        "|---|---|---|---|---:|---:|---|---|",
        *rows,
        "",
    ]
    return "\n".join(lines)


# --- the plan and the commit --------------------------------------------------------------------------


def visibility(args: argparse.Namespace) -> str:
    return ("private" if args.private else "public") + (", gated (manual approval)" if args.gated else "")


def plan_lines(repo_id: str, runs: list[RepoRun], args: argparse.Namespace, extra: list[str]) -> list[str]:
    from medprobe.hub.publish import token_status

    files = [(path, len(data)) for run in runs for path, data in run.files.items()]
    width = max(len(path) for path, _ in files)
    lines = [
        "medprobe publish results (a results repo)",
        f"  repo:       {repo_id} (dataset) -> https://huggingface.co/datasets/{repo_id}",
        f"  visibility: {visibility(args)}",
        f"  token:      {token_status(args.token)}",
        *extra,
    ]
    for run in runs:
        head = manifest_entry(run)["headline"]
        lines += [
            f"  run:     {run.what} -> {run.folder}",
            f"           load_dataset({repo_id!r}, {run.config!r}, split={run.split!r})",
            f"           {head['metric']} {percent(head['value'])} [{percent(head['low'])}, {percent(head['high'])}], "
            f"n {head['n']:,}; data: {run.status.text}",
        ]
    lines += [
        f"  files ({len(files) + 2}):",
        *(f"    {path:<{width}}  {size:>12,} B" for path, size in files),
        f"    {MANIFEST:<{width}}  (the repo's index at its head, with these runs merged in)",
        f"    {'README.md':<{width}}  (the card: configs for load_dataset and a table of every run, drawn from the index)",
        "  calls:",
        *(f"    {number}. {call}" for number, call in enumerate(hub_calls(repo_id, args), 1)),
        "  not checked offline: a real publish reads medprobe_runs.json at the repo's head and refuses to replace a run of "
        "another model or other settings at the same folder",
    ]
    return lines


def hub_calls(repo_id: str, args: argparse.Namespace) -> list[str]:
    from medprobe.hub.publish import access_calls

    before, after = access_calls(repo_id, "dataset", args.private, args.gated)
    return [
        *(call.describe() for call in before),
        f"dataset_info(repo_id={repo_id!r}): the head commit (the new one must follow it)",
        f"hf_hub_download(repo_id={repo_id!r}, repo_type='dataset', filename={MANIFEST!r}, revision=<head>): its index",
        f"create_commit(repo_id={repo_id!r}, repo_type='dataset', operations=<the files above>, parent_commit=<head>, "
        f"create_pr={args.create_pr})",
        *(call.describe() for call in after),
    ]


def publish_to_results_repo(args: argparse.Namespace) -> int:
    from medprobe.hub.publish import check_repo_id

    repo_id = check_repo_id(args.results_repo, RESULTS_REPO)
    if args.model_name is not None and name_part(args.model_name) != args.model_name:
        raise PublishError(
            f"--model-name {args.model_name!r}: use letters, digits and '_' only (a split name), e.g. {name_part(args.model_name)}"
        )
    runs, notes = repo_runs(args)
    extra = [*check_models(runs, args), *check_predictions(runs, args), *(f"  note: {note}" for note in notes)]
    print("\n".join(plan_lines(repo_id, runs, args, extra)))
    if args.dry_run:
        print("dry run: nothing was sent")
        return 0
    url = commit_runs(repo_id, runs, args)
    print(f"published {len(runs)} run(s) to {url}")
    return 0


def commit_runs(repo_id: str, runs: list[RepoRun], args: argparse.Namespace) -> str:
    """Create or open the repo (gated or private first when asked), read its index at the head, commit every file."""
    from huggingface_hub import CommitOperationAdd

    from medprobe.hub.publish import access_calls, hub_api, hub_errors, require_token

    token = require_token(args.token)
    api = hub_api(token)
    before, after = access_calls(repo_id, "dataset", args.private, args.gated)
    with hub_errors(token, repo_id):
        for call in before:
            getattr(api, call.method)(**call.kwargs)
        head = api.dataset_info(repo_id).sha
        existing = read_manifest(api, repo_id, head)
        for line in check_replacements(existing, runs):
            print(f"replaces {line}")
        manifest = merged_manifest(existing, runs, datetime.now(timezone.utc).isoformat(timespec="seconds"))
        files = {path: data for run in runs for path, data in run.files.items()}
        files[MANIFEST] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        files["README.md"] = card_text(repo_id, manifest, args.gated).encode("utf-8")
        commit = api.create_commit(
            repo_id,
            operations=[CommitOperationAdd(path, data) for path, data in files.items()],
            commit_message=f"Add {len(runs)} medprobe run(s): {', '.join(run.folder for run in runs[:3])}",
            repo_type="dataset",
            parent_commit=head,
            create_pr=args.create_pr,
        )
        for call in after:
            getattr(api, call.method)(**call.kwargs)
    return commit.pr_url or commit.commit_url


def read_manifest(api: Any, repo_id: str, revision: str | None) -> dict:
    """The repo's index at `revision`, {} for a new repo."""
    import tempfile

    from huggingface_hub.errors import EntryNotFoundError

    with tempfile.TemporaryDirectory(prefix="medprobe-results-") as tmp:
        try:
            path = api.hf_hub_download(repo_id, MANIFEST, repo_type="dataset", revision=revision, cache_dir=tmp)
        except EntryNotFoundError:
            return {}
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except ValueError:
            raise PublishError(f"{repo_id}'s {MANIFEST} is not JSON: fix or remove it in the repo, then publish again") from None
    return data if isinstance(data, dict) else {}
