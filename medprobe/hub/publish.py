"""`medprobe publish dataset|metric`: datasets to dataset repos, metrics to Spaces; and the Hub I/O that
`publish results` (medprobe/hub/publish_results.py: run results to model cards) shares. The options
are in medprobe/cli/publish.py.

Every command checks its input locally first (medprobe/hub/checks.py), then builds a plan:
the repo, its type, privacy and gating, the exact `HfApi` calls and every file with its size.
`--dry-run` prints the plan and stops, touching no network and needing no token; otherwise the
token is resolved (--token, then HF_TOKEN, then the huggingface_hub login) before the first
request, and the plan's calls run in order. The token is passed to `HfApi` only: it is never
printed, and it is scrubbed from any error message.

`publish dataset` mirrors the folder's data files: Parquet files of the repo's config folders that the
folder does not hold are deleted in the upload's commit (a rebuild names its files by their content,
so they would otherwise stay beside the new ones).

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
from pathlib import Path, PurePosixPath

from huggingface_hub import HfApi, constants, get_token
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError

from medprobe.hub.checks import (
    FileEntry,
    PublishError,
    access_for,
    check_dataset_folder,
    check_metric_folder,
    folder_files,
    metric_folder,
    raw_data_dirs,
)
from medprobe.resources import card_template

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")
HUB_URL_PREFIX = {"dataset": "datasets/", "space": "spaces/", "model": ""}


def check_repo_id(repo_id: str, option: str) -> str:
    if not REPO_ID.match(repo_id) or "--" in repo_id or ".." in repo_id or repo_id.endswith((".", ".git")):
        raise PublishError(
            f"{option} {repo_id!r}: expected <org>/<name> (letters, digits, '-', '_', '.'; no '--' or '..'), e.g. my-lab/my-benchmark"
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
            return (
                f"{what}: no such repo, or the token cannot see it — check the repo id and the token's account (`hf auth whoami`)"
            )
        if status >= 500:
            return f"{what} — the Hub had a server error: try again later (status: https://status.huggingface.co)"
        return f"{what} — {HTTP_ADVICE.get(status, 'the Hub refused the request: see its message')}"
    if isinstance(err, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set — unset it to publish, or use --dry-run"
    if isinstance(err, timeouts):
        return f"{host} did not answer in time ({type(err).__name__}) — check the network or proxy and try again"
    if isinstance(err, transport):
        reason = first_line(err) or type(err).__name__
        if any(
            mark in reason for mark in ("Name or service not known", "name resolution", "nodename nor servname", "getaddrinfo")
        ):
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


def download_text(api: HfApi, repo_id: str, filename: str, revision: str | None, repo_type: str = "model") -> str | None:
    """A text file of the repo at `revision`, or None when it has none (read into a throwaway folder)."""
    with tempfile.TemporaryDirectory(prefix="medprobe-card-") as tmp:
        try:
            path = api.hf_hub_download(repo_id, filename, repo_type=repo_type, revision=revision, cache_dir=tmp)
        except EntryNotFoundError:
            return None
        return Path(path).read_text(encoding="utf-8")


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


def upload_call(
    repo_id: str, repo_type: str, folder: Path, files: list[FileEntry], message: str, delete: list[str] | None = None
) -> HubCall:
    """upload_folder of exactly `files`; `delete`: patterns of the repo's files that go in the same commit,
    unless uploaded again (`delete_patterns`)."""
    kwargs = dict(repo_id=repo_id, repo_type=repo_type, folder_path=str(folder), allow_patterns=[f.path for f in files])
    if delete:
        kwargs["delete_patterns"] = delete
    return HubCall("upload_folder", dict(**kwargs, commit_message=message))


def data_file_patterns(files: list[FileEntry]) -> list[str]:
    """`<folder>/*.parquet` for each folder of the built data files: a republish deletes the repo's old data
    files there (their names carry a content hash, so new data never overwrites them by name)."""
    return [
        f"{folder}/*.parquet"
        for folder in sorted({PurePosixPath(f.path).parent.as_posix() for f in files if f.path.endswith(".parquet")})
    ]


def dataset_plan(folder: str, repo_id: str, private: bool, raw_dirs: list[str] | None, eval_yaml: Path | None = None) -> Plan:
    """The plan of a dataset publish; with `eval_yaml` (a staging folder), also the benchmark's eval.yaml, written there
    and uploaded after the data (medprobe.hub.eval_yaml: refused where the Hub's format does not allow it)."""
    check_repo_id(repo_id, "--repo")
    check = check_dataset_folder(folder, raw_data_dirs(raw_dirs))
    access = access_for(check, private)
    before, after = access_calls(repo_id, "dataset", access.private, access.gated)
    rows = ", ".join(f"{c}/{s} {n:,}" for c, splits in check.rows.items() for s, n in splits.items())
    delete = data_file_patterns(check.files)
    upload = upload_call(repo_id, "dataset", check.folder, check.files, f"Upload {len(check.rows)} config(s): {rows}", delete)
    visibility = ("private" if access.private else "public") + (", gated (manual approval)" if access.gated else "")
    notes = [f"licence: {check.licence}: {access.reason}", f"loaded with load_dataset: {rows} rows"]
    notes.append(
        f"replaces the repo's data files: Parquet files in {', '.join(delete)} that are not among the files below are "
        "deleted in the same commit (a rebuild names its data files by their content)"
    )
    notes += [f"raw licensed file allowed only because the repo is gated/private: {f}" for f in check.raw_findings]
    files, extra = list(check.files), []
    if eval_yaml is not None:
        from medprobe.hub.eval_yaml import write_eval_yaml

        path = write_eval_yaml(check.folder / "README.md", check.rows, eval_yaml)
        files.append(FileEntry("eval.yaml", path.stat().st_size))
        message = "Declare the benchmark's tasks (eval.yaml)"
        extra.append(
            HubCall(
                "upload_file",
                dict(
                    path_or_fileobj=str(path),
                    path_in_repo="eval.yaml",
                    repo_id=repo_id,
                    repo_type="dataset",
                    commit_message=message,
                ),
            )
        )
        notes.append("eval.yaml (the benchmark's tasks, for the Hub's eval results; uploaded after the data):")
        notes += ["  " + line for line in path.read_text(encoding="utf-8").splitlines()]
    return Plan("dataset", repo_id, "dataset", visibility, [*before, upload, *extra, *after], files, notes)


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
    with tempfile.TemporaryDirectory(prefix="medprobe-eval-yaml-") as staging:
        plan = dataset_plan(args.folder, args.repo, args.private, args.raw_data, Path(staging) if args.eval_yaml else None)
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


def load_profile(folder: Path) -> tuple[dict, str, dict]:
    """(profile.json, profile.md, label -> each run's medprobe.records.LoadedRun) of a folder written by `medprobe
    profile`, checked by medprobe.profiling.profile.read_verified_profile (files, runs, headline and table)."""
    from medprobe.contracts import UserError
    from medprobe.profiling.profile import read_verified_profile

    paths = [folder / "profile.json", folder / "profile.md"]
    missing = [path.name for path in paths if not path.is_file()]
    if missing:
        raise PublishError(
            f"{folder} is a folder without {' and '.join(missing)}: give a results JSON of `medprobe probe`, "
            "or a folder written by `medprobe profile`"
        )
    try:
        profile, runs = read_verified_profile(folder)
    except PublishError:
        raise
    except UserError as err:  # one kind of error for whatever publish refuses (hub_errors passes it through)
        raise PublishError(str(err)) from None
    return profile, paths[1].read_text(encoding="utf-8"), runs
