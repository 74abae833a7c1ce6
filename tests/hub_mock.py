"""A fake Hugging Face Hub behind an httpx MockTransport, for publishing tests.

`huggingface_hub.set_client_factory` routes every request that `HfApi` makes to `FakeHub.handle`,
which implements the few endpoints publishing uses (create repo, repo settings, YAML
validation, preupload, commit with added and deleted files, repo info with file metadata, file
tree listing, file download) and records what it was asked. Files are committed inline ("regular"
upload mode), so the fake sees their exact bytes and no LFS or Xet storage is involved; the file
metadata (`model_info(files_metadata=True)`) reports the files the Hub stores with LFS by default
(weights, Parquet) with their LFS size and sha256, as the Hub does. Nothing leaves the process.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
from huggingface_hub import constants, set_client_factory
from huggingface_hub.utils import _http

REPO_PATH = r"(?P<ns>[\w.-]+)/(?P<name>[\w.-]+)"
TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
HEAD = "c0ffee" * 6 + "c0ff"  # the commit every fake repo is at
LFS_PATTERNS = ("*.safetensors", "*.bin", "*.gguf", "*.parquet")  # some of the Hub's default .gitattributes


def sibling(path: str, content: bytes) -> dict:
    """A file of a repo as the Hub's `?blobs=true` repo info lists it: size, git blob id, and LFS size and sha256."""
    entry = {"rfilename": path, "size": len(content), "blobId": hashlib.sha1(content).hexdigest()}
    if any(fnmatch.fnmatch(path, pattern) for pattern in LFS_PATTERNS):
        entry["lfs"] = {"size": len(content), "sha256": hashlib.sha256(content).hexdigest(), "pointerSize": 134}
    return entry


def dataset_card(configs: dict[str, dict[str, str]], benchmark: str = "medlama") -> bytes:
    """A dataset card as `medprobe publish dataset` uploads it, reduced to its `medprobe_build:` record: each config's
    data files (`<config>/<split>-...parquet`) with their sha256."""
    import yaml

    record = {"benchmark": benchmark, "configs": {config: {"files": files} for config, files in configs.items()}}
    return f"---\n{yaml.safe_dump({'medprobe_build': record}, sort_keys=False)}---\n\n# {benchmark}\n".encode()


@dataclass
class FakeRepo:
    repo_type: str
    private: bool
    gated: object = False
    sdk: str | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[dict] = field(default_factory=list)  # {"message", "files", "create_pr", "parent", "private", "gated"}


@dataclass
class FakeHub:
    repos: dict[tuple[str, str], FakeRepo] = field(default_factory=dict)  # (type, id) -> repo
    log: list[str] = field(default_factory=list)  # "METHOD /path", in order
    authorizations: set[str] = field(default_factory=set)
    settings_calls: list[tuple[str, dict]] = field(default_factory=list)  # (repo id, payload)
    fail_commits_with: int | None = None  # answer every commit with this HTTP status
    fail_requests_with: BaseException | int | None = None  # raise this (e.g. httpx2.ConnectError) or answer this status

    def add_repo(self, repo_type: str, repo_id: str, files: dict[str, bytes] | None = None, private: bool = False) -> FakeRepo:
        repo = FakeRepo(repo_type, private, files=dict(files or {}))
        self.repos[(repo_type, repo_id)] = repo
        return repo

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handle), event_hooks={"request": [_http.hf_request_event_hook]})

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        self.log.append(f"{request.method} {path}")
        if "authorization" in request.headers:
            self.authorizations.add(request.headers["authorization"])
        if isinstance(self.fail_requests_with, BaseException):
            raise self.fail_requests_with
        if self.fail_requests_with:
            return httpx2.Response(self.fail_requests_with, json={"error": f"fake hub: status {self.fail_requests_with}"})
        routes = [
            ("POST", r"/api/repos/create", self.create_repo),
            ("POST", r"/api/validate-yaml", lambda req: httpx2.Response(200, json={"errors": [], "warnings": []})),
            ("PUT", rf"/api/(?P<type>\w+)/{REPO_PATH}/settings", self.update_settings),
            ("POST", rf"/api/(?P<type>\w+)/{REPO_PATH}/preupload/(?P<rev>[^/]+)", self.preupload),
            ("POST", rf"/api/(?P<type>\w+)/{REPO_PATH}/commit/(?P<rev>[^/]+)", self.commit),
            ("GET", rf"/api/(?P<type>models|datasets|spaces)/{REPO_PATH}(/revision/[^/]+)?", self.repo_info),
            ("GET", rf"/api/(?P<type>models|datasets|spaces)/{REPO_PATH}/tree/(?P<rev>[^/]+)", self.tree),
            ("HEAD", rf"/{REPO_PATH}/resolve/(?P<rev>[^/]+)/(?P<file>.+)", self.resolve),
            ("GET", rf"/{REPO_PATH}/resolve/(?P<rev>[^/]+)/(?P<file>.+)", self.resolve),
            ("HEAD", rf"/(?P<type>datasets|spaces)/{REPO_PATH}/resolve/(?P<rev>[^/]+)/(?P<file>.+)", self.resolve),
            ("GET", rf"/(?P<type>datasets|spaces)/{REPO_PATH}/resolve/(?P<rev>[^/]+)/(?P<file>.+)", self.resolve),
        ]
        for method, pattern, handler in routes:
            match = re.fullmatch(pattern, path)
            if request.method == method and match:
                return handler(request, **match.groupdict()) if match.groupdict() else handler(request)
        return httpx2.Response(404, json={"error": f"fake hub: no route for {request.method} {path}"})

    def repo(self, repo_type: str, ns: str, name: str) -> FakeRepo | None:
        return self.repos.get((TYPES.get(repo_type, repo_type), f"{ns}/{name}"))

    @staticmethod
    def not_found(what: str = "RepoNotFound") -> httpx2.Response:
        return httpx2.Response(404, headers={"X-Error-Code": what}, json={"error": what})

    def create_repo(self, request: httpx2.Request) -> httpx2.Response:
        payload = json.loads(request.content)
        repo_type = payload.get("type", "model")
        repo_id = f"{payload['organization']}/{payload['name']}"
        url = f"https://huggingface.co/{repo_type}s/{repo_id}"
        if (repo_type, repo_id) in self.repos:  # the Hub names the existing repo in its 409
            return httpx2.Response(409, json={"error": "You already created this repo", "url": url})
        repo = self.add_repo(repo_type, repo_id, private=payload.get("visibility") == "private")
        repo.sdk = payload.get("sdk")
        return httpx2.Response(200, json={"url": url})

    def update_settings(self, request, type, ns, name) -> httpx2.Response:
        repo = self.repo(type, ns, name)
        if repo is None:
            return self.not_found()
        payload = json.loads(request.content)
        self.settings_calls.append((f"{ns}/{name}", payload))
        if "gated" in payload:
            repo.gated = payload["gated"]
        if "visibility" in payload:
            repo.private = payload["visibility"] == "private"
        return httpx2.Response(200, json={})

    def preupload(self, request, type, ns, name, rev) -> httpx2.Response:
        if self.repo(type, ns, name) is None:
            return self.not_found()
        files = json.loads(request.content)["files"]
        return httpx2.Response(
            200, json={"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]}
        )

    def commit(self, request, type, ns, name, rev) -> httpx2.Response:
        repo = self.repo(type, ns, name)
        if repo is None:
            return self.not_found()
        if self.fail_commits_with:
            return httpx2.Response(self.fail_commits_with, json={"error": "You don't have the rights to write here"})
        lines = [json.loads(line) for line in request.content.decode().splitlines() if line]
        header = next(line["value"] for line in lines if line["key"] == "header")
        files = {line["value"]["path"]: base64.b64decode(line["value"]["content"]) for line in lines if line["key"] == "file"}
        deleted = [line["value"]["path"] for line in lines if line["key"] == "deletedFile"]
        if any(line["key"] not in ("header", "file", "deletedFile") for line in lines):
            return httpx2.Response(400, json={"error": "fake hub: only inline file additions and file deletions are supported"})
        missing = [path for path in deleted if path not in repo.files]
        if missing:
            return httpx2.Response(404, json={"error": f"fake hub: cannot delete {missing}: no such file"})
        create_pr = request.url.params.get("create_pr") == "1"
        repo.commits.append(
            {
                "message": header["summary"],
                "files": files,
                "deleted": deleted,
                "create_pr": create_pr,
                "parent": header.get("parentCommit"),
                "private": repo.private,
                "gated": repo.gated,
            }
        )
        if not create_pr:
            for path in deleted:
                del repo.files[path]
            repo.files.update(files)
        oid = hashlib.sha1(request.content).hexdigest()
        return httpx2.Response(
            200,
            json={
                "commitUrl": f"https://huggingface.co/{ns}/{name}/commit/{oid}",
                "commitOid": oid,
                "pullRequestUrl": f"https://huggingface.co/{ns}/{name}/discussions/1" if create_pr else None,
            },
        )

    def repo_info(self, request, type, ns, name, **_) -> httpx2.Response:
        repo = self.repo(type, ns, name)
        if repo is None:
            return self.not_found()
        info = {"id": f"{ns}/{name}", "sha": HEAD, "private": repo.private}
        if request.url.params.get("blobs") in ("1", "true", "True"):  # model_info(files_metadata=True)
            info["siblings"] = [sibling(path, content) for path, content in sorted(repo.files.items())]
        return httpx2.Response(200, json=info)

    def tree(self, request, type, ns, name, rev) -> httpx2.Response:
        """Every file of the repo (list_repo_files, e.g. for upload_folder's delete_patterns), in one page."""
        repo = self.repo(type, ns, name)
        if repo is None:
            return self.not_found()
        return httpx2.Response(
            200,
            json=[
                {"type": "file", "path": path, "size": len(content), "oid": hashlib.sha1(content).hexdigest()}
                for path, content in sorted(repo.files.items())
            ],
        )

    def resolve(self, request, ns, name, rev, file, type="models") -> httpx2.Response:
        repo = self.repo(type, ns, name)
        if repo is None:
            return self.not_found()
        if file not in repo.files:
            return self.not_found("EntryNotFound")
        content = repo.files[file]
        etag = hashlib.sha1(content).hexdigest()
        headers = {"ETag": f'"{etag}"', "X-Repo-Commit": HEAD, "Content-Length": str(len(content))}
        return httpx2.Response(200, headers=headers, content=b"" if request.method == "HEAD" else content)


@contextmanager
def serving(monkeypatch, tmp_path: Path, token: str | None = None) -> Iterator[FakeHub]:
    """A FakeHub that every huggingface_hub request goes to inside the block, the process online to it, with an
    empty Hub cache in `tmp_path` (the model checks read the local cache) and HF_TOKEN set when `token` is given."""
    import medprobe.local_paths

    fake = FakeHub()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # the FakeHub answers: the reachability probe (a TCP connection to the real host) would ask the real network
    monkeypatch.setattr(medprobe.local_paths, "host_reachable", lambda host, port=443, timeout=0: True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    if token:
        monkeypatch.setenv("HF_TOKEN", token)
    set_client_factory(fake.client)
    try:
        yield fake
    finally:
        set_client_factory(_http.default_client_factory)
