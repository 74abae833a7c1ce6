"""What exactly a run measured: the data's content, the items probed, the model, and medprobe itself.

    dataset_fingerprint("out/medlama", [("hard", "test")])   # sha256 of the Parquet files probed
    model_identity("minilm")                                  # path or Hub id, revision, weights sha256
    source_identity()                                         # medprobe's version and git commit
    items_digest(["q1", "q2"])                                # sha256 of the probed item ids

A results JSON records all four, so that two numbers can be told apart (or paired: `medprobe
compare` refuses runs whose data or items differ) and a published number names its model.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterable
from pathlib import Path

from medprobe.digests import sha256_text
from medprobe.loading import dataset_fingerprint, files_digest  # re-exported: what a run read (they live in the data layer)

__all__ = ["dataset_fingerprint", "files_digest", "items_digest", "model_identity", "source_identity"]


def items_digest(ids: Iterable[str]) -> str:
    """sha256 of the sorted item ids: equal exactly when two runs probed the same items."""
    return sha256_text("\n".join(sorted(map(str, ids))))


def model_identity(model: str) -> dict:
    """The model a run loaded: the name given, the folder it was read from (local, packaged or the Hub
    cache's snapshot), the Hub id and revision when it came from the Hub, and the weights' sha256
    (one digest over every weight file's name, size and sha256, as the embedding cache keys them)."""
    from medprobe.models import resolve_model

    identity: dict = {"name": model}
    try:
        path, _ = resolve_model(model)
    except (OSError, ValueError) as err:  # a model a prober of its own reads (not a folder, packaged name or Hub id)
        return {**identity, "note": f"not identified: {err}"}
    folder = Path(path).expanduser()
    if folder.exists():
        identity["path"] = str(folder.resolve())
    else:  # a Hub id: the snapshot it was loaded from, if cached
        identity["hub_id"] = model
        snapshot = hub_snapshot(model)
        if snapshot is None:
            return identity
        folder = snapshot
        identity["revision"] = snapshot.name
    identity.update(weights_identity(folder))
    return identity


def hub_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot folder of a Hub model (its name is the commit), or None."""
    from huggingface_hub import try_to_load_from_cache

    try:
        config = try_to_load_from_cache(repo_id, "config.json")
    except ValueError:  # not a valid repo id
        return None
    return Path(config).parent if isinstance(config, str) else None


def weights_identity(folder: Path) -> dict:
    """{"weights_sha256": ..., "weights": {file: {"size", "sha256"}}} of a model folder's weight files: the
    digest the embedding cache keys the model by, from the per-file digests it remembers (a big model is
    hashed once, not on every run)."""
    from medprobe.digests import cache_root, combined_digest, weight_file_digests

    weights = weight_file_digests(folder, cache_root())
    return {"weights_sha256": combined_digest(weights), "weights": weights} if weights else {}


@functools.lru_cache(maxsize=1)
def source_identity() -> dict:
    """medprobe's version and, when it runs from a git checkout, the commit and whether files differ from it."""
    from medprobe import __version__

    identity: dict = {"version": __version__}
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return identity
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return identity
    if commit.returncode == 0:
        identity["commit"] = commit.stdout.strip()
        identity["dirty"] = bool(status.stdout.strip()) if status.returncode == 0 else None
    return identity
