"""`medprobe publish`: datasets to dataset repos, metrics to Spaces, run results to model cards.

Every command checks its input locally first (probers/hub/checks.py), then builds a plan:
the repo, its type, privacy and gating, the exact `HfApi` calls and every file with its size.
`--dry-run` prints the plan and stops, touching no network and needing no token; otherwise the
token is resolved (--token, then HF_TOKEN, then the huggingface_hub login) before the first
request, and the plan's calls run in order. The token is passed to `HfApi` only: it is never
printed, and it is scrubbed from any error message.

Gated and private datasets never sit public and ungated, even briefly: a new repo is created
private, gating is switched on before the data is uploaded, and only then is a gated repo
made public.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi, constants, get_token
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError

from probers.hub.checks import (
    FileEntry,
    PublishError,
    access_for,
    check_dataset_folder,
    check_metric_folder,
    folder_files,
    metric_folder,
    raw_data_dirs,
)
from probers.hub.resources import card_template

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")
HUB_URL_PREFIX = {"dataset": "datasets/", "space": "spaces/", "model": ""}


def check_repo_id(repo_id: str, option: str) -> str:
    if not REPO_ID.match(repo_id) or "--" in repo_id or ".." in repo_id or repo_id.endswith((".", ".git")):
        raise PublishError(
            f"{option} {repo_id!r}: expected <org>/<name> (letters, digits, '-', '_', '.'; no '--' or '..'), "
            "e.g. my-lab/medlama"
        )
    return repo_id


def resolve_token(explicit: str | None) -> tuple[str | None, str]:
    """The token and where it came from: --token, then HF_TOKEN, then the stored login."""
    if explicit:
        return explicit, "--token"
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"], "HF_TOKEN"
    stored = get_token()
    return (stored, "huggingface_hub login") if stored else (None, "none")


def require_token(explicit: str | None) -> str:
    token, _ = resolve_token(explicit)
    if not token:
        raise PublishError(
            "no Hugging Face token: pass --token, set HF_TOKEN or log in with `hf auth login` "
            "(a write token for the target org); --dry-run shows the plan without one"
        )
    return token


def token_status(explicit: str | None) -> str:
    """Where the token would come from, for the printed plan (never the token itself)."""
    token, source = resolve_token(explicit)
    return f"found ({source})" if token else "none: a real run stops here"


def redact(text: str, token: str | None) -> str:
    return text.replace(token, "<token>") if token else text


@dataclass
class HubCall:
    """One `HfApi` method call of a plan (the token is given to `HfApi`, never kept here)."""

    method: str
    kwargs: dict

    def describe(self) -> str:
        shown = [
            f"{key}=<the {len(value)} files below>" if key == "allow_patterns" else f"{key}={value!r}"
            for key, value in self.kwargs.items()
        ]
        return f"{self.method}({', '.join(shown)})"


@dataclass
class Plan:
    command: str
    repo_id: str
    repo_type: str
    visibility: str
    calls: list[HubCall]
    files: list[FileEntry]
    notes: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{constants.ENDPOINT}/{HUB_URL_PREFIX[self.repo_type]}{self.repo_id}"

    def describe(self, token_note: str) -> str:
        width = max([len(f.path) for f in self.files] or [0])
        lines = [
            f"medprobe publish {self.command}",
            f"  repo:       {self.repo_id} ({self.repo_type}) -> {self.url}",
            f"  visibility: {self.visibility}",
            f"  token:      {token_note}",
            "  calls:",
            *(f"    {i}. {call.describe()}" for i, call in enumerate(self.calls, 1)),
            f"  files ({len(self.files)}, {sum(f.size for f in self.files):,} bytes):",
            *(f"    {f.path:<{width}}  {f.size:>12,} B" for f in self.files),
            *(f"  note: {note}" for note in self.notes),
        ]
        return "\n".join(lines)


def hub_api(token: str) -> HfApi:
    if constants.is_offline_mode():
        raise PublishError("HF_HUB_OFFLINE is set: publishing needs the Hub; unset it, or use --dry-run")
    return HfApi(token=token)


# What to try after a Hub answer with this HTTP status; 5xx and the rest have their own lines below.
HTTP_ADVICE = {
    400: "the Hub refused the request as malformed: check the repo id and the files, and report it if it persists",
    401: "the token was refused: check it with `hf auth whoami`, or pass a valid write token (--token or HF_TOKEN)",
    403: "the token may not write there: use a write token of an account that is a member of the repo's org "
    "(a fine-grained token needs write access to this repo)",
    404: "no such repo, or the token cannot see it: check the repo id and the token's account",
    409: "the repo changed while publishing (a conflicting commit): run the command again",
    412: "the repo changed since it was read (another commit came first): run the command again",
    429: "the Hub is rate-limiting this account: wait a few minutes and run the command again",
}


def http_error_classes() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, other transport failures) as raised by the HTTP client huggingface_hub uses:
    httpx2 today, httpx in older releases; their errors are not OSErrors."""
    timeouts: list[type[BaseException]] = [TimeoutError]
    transport: list[type[BaseException]] = [ConnectionError]
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


def describe_hub_failure(err: BaseException) -> str:
    """`<what happened> — <what to try>` for a failed Hub request, on one line."""
    timeouts, transport = http_error_classes()
    host = constants.ENDPOINT
    if isinstance(err, HfHubHTTPError) and getattr(err, "response", None) is not None:
        status = err.response.status_code
        server = f" ({first_line(err.server_message)})" if err.server_message else ""
        what = f"HTTP {status} {err.response.reason_phrase}{server} from {err.response.request.method} {err.response.url.path}"
        if isinstance(err, RepositoryNotFoundError):
            return f"{what}: no such repo, or the token cannot see it — check the repo id and the token's account (`hf auth whoami`)"
        if status >= 500:
            return f"{what} — the Hub had a server error: try again later (status: https://status.huggingface.co)"
        return f"{what} — {HTTP_ADVICE.get(status, 'the Hub refused the request: see its message')}"
    if isinstance(err, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set — unset it to publish, or use --dry-run"
    if isinstance(err, timeouts):
        return f"{host} did not answer in time ({type(err).__name__}) — check the network or proxy and try again"
    if isinstance(err, transport):
        reason = first_line(err) or type(err).__name__
        if any(mark in reason for mark in ("Name or service not known", "name resolution", "nodename nor servname", "getaddrinfo")):
            return f"cannot resolve {host} ({reason}) — check the network and DNS, the proxy (HTTPS_PROXY) or HF_ENDPOINT"
        return f"cannot reach {host} ({type(err).__name__}: {reason}) — check the network, the proxy (HTTPS_PROXY) or HF_ENDPOINT"
    return f"{first_line(err) or type(err).__name__} — check the message, then run the command again"


def first_line(value: object) -> str:
    lines = [line.strip() for line in str(value).splitlines() if line.strip()]
    return lines[0] if lines else ""


@contextmanager
def hub_errors(token: str, repo_id: str | None = None) -> Iterator[None]:
    """Hub failures (HTTP errors, no route, DNS, timeouts) as one-line user errors,
    `publish to <repo> failed: <what> — <what to try>`, with the token scrubbed from the message."""
    _, transport = http_error_classes()
    try:
        yield
    except PublishError as err:
        raise PublishError(redact(str(err), token)) from None
    except (OSError, ValueError, *transport) as err:  # HfHubHTTPError and OfflineModeIsEnabled are OSErrors
        target = f"publish to {repo_id}" if repo_id else "publishing"
        raise PublishError(redact(f"{target} failed: {describe_hub_failure(err)}", token)) from None


def run_plan(plan: Plan, token: str) -> None:
    api = hub_api(token)
    with hub_errors(token, plan.repo_id):
        for call in plan.calls:
            getattr(api, call.method)(**call.kwargs)


# --- plans ------------------------------------------------------------------------------------------


def access_calls(repo_id: str, repo_type: str, private: bool, gated: bool, **create: object) -> tuple[list, list]:
    """Calls before and after the upload that leave the repo as asked without ever exposing it:
    created private when it ends private or gated, gated before data lands, opened last."""
    starts_private = private or gated
    before = [HubCall("create_repo", dict(repo_id=repo_id, repo_type=repo_type, private=starts_private, exist_ok=True, **create))]
    if starts_private:  # an existing repo too
        settings = {"private": True, **({"gated": "manual"} if gated else {})}
        before.append(HubCall("update_repo_settings", dict(repo_id=repo_id, repo_type=repo_type, **settings)))
    after = []
    if gated and not private:
        after.append(HubCall("update_repo_settings", dict(repo_id=repo_id, repo_type=repo_type, private=False)))
    return before, after


def upload_call(repo_id: str, repo_type: str, folder: Path, files: list[FileEntry], message: str) -> HubCall:
    return HubCall(
        "upload_folder",
        dict(
            repo_id=repo_id,
            repo_type=repo_type,
            folder_path=str(folder),
            allow_patterns=[f.path for f in files],
            commit_message=message,
        ),
    )


def dataset_plan(folder: str, repo_id: str, private: bool, raw_dirs: list[str] | None) -> Plan:
    check_repo_id(repo_id, "--repo")
    check = check_dataset_folder(folder, raw_data_dirs(raw_dirs))
    access = access_for(check, private)
    before, after = access_calls(repo_id, "dataset", access.private, access.gated)
    rows = ", ".join(f"{c}/{s} {n:,}" for c, splits in check.rows.items() for s, n in splits.items())
    upload = upload_call(repo_id, "dataset", check.folder, check.files, f"Upload {len(check.rows)} config(s): {rows}")
    visibility = ("private" if access.private else "public") + (", gated (manual approval)" if access.gated else "")
    notes = [f"licence: {check.licence}: {access.reason}", f"loaded with load_dataset: {rows} rows"]
    notes += [f"raw licensed file allowed only because the repo is gated/private: {f}" for f in check.raw_findings]
    return Plan("dataset", repo_id, "dataset", visibility, [*before, upload, *after], check.files, notes)


def metric_plan(name: str, repo_id: str, private: bool, staging: Path) -> Plan:
    """Stage the Space folder (module, card, requirements.txt, app.py) in `staging` and plan its upload."""
    check_repo_id(repo_id, "--repo")
    check = check_metric_folder(metric_folder(name))
    for entry in check.files:
        shutil.copyfile(check.folder / entry.path, staging / entry.path)
    own_app = (check.folder / "app.py").is_file()
    if not own_app:
        shutil.copyfile(card_template("metric_app.py"), staging / "app.py")
    files = folder_files(staging)
    before, after = access_calls(repo_id, "space", private, False, space_sdk="gradio")
    upload = upload_call(repo_id, "space", staging, files, f"Upload the {check.name} evaluate module and its gradio app")
    notes = [
        f"evaluate.load({str(check.folder)!r}) loads the module offline; the card's Space YAML names sdk: gradio",
        "app.py is the metric's own" if own_app else "app.py is medprobe's shared metric app (hub_cards/metric_app.py)",
    ]
    return Plan("metric", repo_id, "space", "private" if private else "public", [*before, upload, *after], files, notes)


# --- commands ---------------------------------------------------------------------------------------


def run_publish_dataset(args: argparse.Namespace) -> int:
    plan = dataset_plan(args.folder, args.repo, args.private, args.raw_data)
    return finish(plan, args)


def run_publish_metric(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="medprobe-space-") as staging:
        plan = metric_plan(args.metric, args.repo, args.private, Path(staging))
        return finish(plan, args)


def finish(plan: Plan, args: argparse.Namespace) -> int:
    print(plan.describe(token_status(args.token)))
    if args.dry_run:
        print("dry run: nothing was sent")
        return 0
    run_plan(plan, require_token(args.token))
    print(f"published {plan.url} ({plan.visibility})")
    return 0


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


def run_publish_results(args: argparse.Namespace) -> int:
    from probers.hub.eval_results import eval_results_for, merge_into_card, model_index_yaml
    from probers.results import load_record

    if Path(args.results).is_dir():
        return run_publish_profile(args)
    repo_id = check_repo_id(args.model_repo, "--model-repo")
    record = load_record(args.results)
    plain, named = parse_dataset_ids(args.dataset_id)
    dataset_id = results_dataset_id(named.get(record.benchmark, plain), record.dataset)
    results = eval_results_for(record, dataset_id, metrics=args.metric, task_type=args.task_type, source_url=args.source_url)
    model_name = repo_id.split("/")[1]
    lines = [
        "medprobe publish results",
        f"  repo:   {repo_id} (model) -> {constants.ENDPOINT}/{repo_id}",
        f"  token:  {token_status(args.token)}",
        "  calls:",
        f"    1. model_info(repo_id={repo_id!r}): the current commit, which the new one must follow",
        f"    2. hf_hub_download(repo_id={repo_id!r}, filename='README.md'): the card at that commit, kept and merged",
        f"    3. create_commit(repo_id={repo_id!r}, operations=['README.md'], create_pr={args.create_pr}): "
        f"{len(results)} eval result(s) merged into its model-index",
        f"  eval results ({dataset_id}, config {record.config}, split {record.split}, prober {record.prober}):",
        *("    " + line for line in model_index_yaml(results, model_name).splitlines()),
    ]
    print("\n".join(lines))
    if args.dry_run:
        print("dry run: nothing was sent")
        return 0
    message = f"Add {record.benchmark} eval results ({record.prober}) with medprobe"
    url = commit_card(args, repo_id, message, lambda existing: merge_into_card(existing, results, model_name, dataset_id))
    print(f"published {len(results)} eval result(s) to {url}")
    return 0


def commit_card(args: argparse.Namespace, repo_id: str, message: str, make_card) -> str:
    """Read the model card at the repo's head, commit `make_card(existing text or None)` on top of it."""
    token = require_token(args.token)
    api = hub_api(token)
    with hub_errors(token, repo_id):
        try:
            head = api.model_info(repo_id).sha
        except RepositoryNotFoundError:
            raise PublishError(
                f"publish to {repo_id} failed: no such model repo (or the token cannot see it) — check --model-repo, "
                "push the model first, and check the token's account with `hf auth whoami`"
            ) from None
        card = make_card(download_card(api, repo_id, head))
        commit = api.create_commit(
            repo_id,
            operations=[CommitOperationAdd("README.md", str(card).encode("utf-8"))],
            commit_message=message,
            parent_commit=head,  # the Hub refuses the commit if the card changed since we read it
            create_pr=args.create_pr,
        )
    return commit.pr_url or commit.commit_url


def load_profile(folder: Path) -> tuple[dict, str]:
    """(profile.json, profile.md) of a folder written by `medprobe profile`, whose files (run results and
    predictions, profile.md, ...) are the ones profile.json recorded, by sha256."""
    import json

    from probers.profile_folder import disagreement

    paths = [folder / "profile.json", folder / "profile.md"]
    missing = [path.name for path in paths if not path.is_file()]
    if missing:
        raise PublishError(
            f"{folder} is a folder without {' and '.join(missing)}: give a results JSON of `medprobe probe`, "
            "or a folder written by `medprobe profile`"
        )
    try:
        profile = json.loads(paths[0].read_text(encoding="utf-8"))
        runs = profile["runs"]
        data = profile["data"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise PublishError(f"{paths[0]} is not a medprobe profile ({err})") from None
    if not isinstance(runs, list) or not isinstance(data, dict):
        raise PublishError(f"{paths[0]} is not a medprobe profile (runs is not a list)")
    problem = disagreement(folder, profile)
    if problem:
        raise PublishError(f"{problem}; the folder is not the profile its profile.json describes: run `medprobe profile` again")
    return profile, paths[1].read_text(encoding="utf-8")


def profile_results(profile: dict, args: argparse.Namespace) -> tuple[list, list[str], list[str]]:
    """(eval results of every publishable run, the dataset ids, notes on the runs left out and why)."""
    from probers.hub.eval_results import eval_results_for
    from probers.results import RunRecord

    plain, named = parse_dataset_ids(args.dataset_id)
    if plain:
        raise PublishError(f"--dataset-id {plain}: a profile covers several benchmarks; name each, e.g. --dataset-id medlama={plain}")
    results, dataset_ids, notes, unnamed = [], [], [], {}
    for run in profile["runs"]:
        label, benchmark = run.get("label"), run.get("benchmark")
        source = profile["data"].get(benchmark) or {}
        if run.get("record") is None:
            notes.append(f"{label}: left out, the run failed")
        elif run.get("floor_of"):
            notes.append(f"{label}: left out, a floor (random weights), not a result of this model")
        elif source.get("sample"):
            notes.append(f"{label}: left out, its data is a shipped sample, not the benchmark ({source.get('source')})")
        else:
            record = RunRecord(**run["record"])
            wanted = [name for name in args.metric or [] if name in record.metrics]
            if args.metric and not wanted:
                notes.append(f"{label}: left out, it has none of --metric {', '.join(args.metric)}")
                continue
            explicit = named.get(benchmark)
            if not explicit and (Path(record.dataset).exists() or not REPO_ID.match(record.dataset)):
                unnamed.setdefault(benchmark, record.dataset)
                continue
            dataset_id = results_dataset_id(explicit, record.dataset, benchmark)
            results += eval_results_for(record, dataset_id, metrics=wanted or None, task_type=args.task_type, source_url=args.source_url)
            dataset_ids.append(dataset_id)
    if unnamed:
        flags = " ".join(f"--dataset-id {name}=<org>/<name>" for name in unnamed)
        raise PublishError(f"the profile's runs read local datasets ({', '.join(f'{n}: {p}' for n, p in unnamed.items())}): "
                           f"name their Hub ids with {flags}, so that the model card links to the published datasets")  # fmt: skip
    if args.metric and not results:
        raise PublishError(f"--metric {', '.join(args.metric)}: in none of the profile's runs")
    return results, list(dict.fromkeys(dataset_ids)), notes


def run_publish_profile(args: argparse.Namespace) -> int:
    """A `medprobe profile` folder: every run of the model as eval results, profile.md as a card section."""
    from probers.hub.eval_results import merge_into_card, model_index_yaml, with_profile_section

    repo_id = check_repo_id(args.model_repo, "--model-repo")
    folder = Path(args.results)
    profile, table = load_profile(folder)
    results, dataset_ids, notes = profile_results(profile, args)
    model_name = repo_id.split("/")[1]
    lines = [
        "medprobe publish results (a profile)",
        f"  profile: {folder} (model {profile.get('model')}, {len(profile['runs'])} run(s))",
        f"  repo:    {repo_id} (model) -> {constants.ENDPOINT}/{repo_id}",
        f"  token:   {token_status(args.token)}",
        "  calls:",
        f"    1. model_info(repo_id={repo_id!r}): the current commit, which the new one must follow",
        f"    2. hf_hub_download(repo_id={repo_id!r}, filename='README.md'): the card at that commit, kept and merged",
        f"    3. create_commit(repo_id={repo_id!r}, operations=['README.md'], create_pr={args.create_pr}): "
        f"{len(results)} eval result(s) merged into its model-index, profile.md ({len(table.splitlines())} lines) as its "
        "knowledge-profile section",
        *(f"  note: {note}" for note in notes),
        "  eval results:",
        *("    " + line for line in (model_index_yaml(results, model_name).splitlines() if results else ["(none)"])),
    ]
    print("\n".join(lines))
    if args.dry_run:
        print("dry run: nothing was sent")
        return 0

    def make_card(existing: str | None):
        return with_profile_section(merge_into_card(existing, results, model_name, dataset_ids), table)

    message = f"Add the medprobe knowledge profile ({len(results)} eval results)"
    url = commit_card(args, repo_id, message, make_card)
    print(f"published the knowledge profile and {len(results)} eval result(s) to {url}")
    return 0


def download_card(api: HfApi, repo_id: str, revision: str) -> str | None:
    """The model repo's README.md at `revision`, or None when it has none (read into a throwaway folder)."""
    with tempfile.TemporaryDirectory(prefix="medprobe-card-") as tmp:
        try:
            path = api.hf_hub_download(repo_id, "README.md", repo_type="model", revision=revision, cache_dir=tmp)
        except EntryNotFoundError:
            return None
        return Path(path).read_text(encoding="utf-8")


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
        "--raw-data", action="append", metavar="DIR",
        help="folder of raw licensed files (e.g. your MedNLI or UMLS download) whose files must not be uploaded "
        "(repeatable; ../shared/data and $MEDPROBE_SHARED_DATA are always compared when present)",
    )  # fmt: skip
    dataset.set_defaults(func=run_publish_dataset)

    metric = commands.add_parser(
        "metric",
        parents=[common],
        help="an evaluate module to a gradio Space",
        description="Check a metric (evaluate.load, Space YAML), then upload it as a gradio Space with medprobe's app.",
    )
    metric.add_argument("metric", help="a shipped metric name (e.g. acc_at_k) or a metric folder")
    metric.add_argument("--repo", required=True, help="Space repo id, <org>/<name>")
    metric.add_argument("--private", action="store_true", help="create a private Space")
    metric.set_defaults(func=run_publish_metric)

    results = commands.add_parser(
        "results",
        parents=[common],
        help="a run's results JSON, or a profile folder, into a model card's eval results (model-index)",
        description=(
            "Merge a run's overall metrics into the model card's model-index; the rest of the card is kept. "
            "Given a folder written by `medprobe profile`, every run of the model goes in as eval results (floor "
            "runs, failed runs and runs on a shipped sample are left out, and the plan says so) and profile.md "
            "becomes the card's knowledge-profile section, replaced on the next publish."
        ),
    )
    results.add_argument("results", help="results JSON written by medprobe probe --out, or a folder written by medprobe profile")
    results.add_argument("--model-repo", required=True, help="model repo id, <org>/<model>")
    results.add_argument(
        "--dataset-id", action="append", metavar="[BENCHMARK=]ORG/NAME",
        help="Hub id of the benchmark dataset (default: the run's --dataset, if a Hub id); for a profile, one per "
        "benchmark as BENCHMARK=ORG/NAME (repeatable)",
    )  # fmt: skip
    results.add_argument("--metric", action="append", help="publish only this metric (repeatable; default: all overall metrics)")
    results.add_argument("--task-type", help="model-index task type (default: the benchmark card's first task category)")
    results.add_argument("--source-url", help="link shown as the results' source (e.g. the run's logs)")
    results.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing (others' models)")
    results.set_defaults(func=run_publish_results)
