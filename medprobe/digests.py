"""The sha256 digests medprobe records of files and texts: one helper for every writer and reader.

    sha256_file(Path("out/results.outcomes.jsonl"))   # hex digest of the bytes, read in 1 MiB blocks
    sha256_bytes(data)                                  # hex digest of bytes already read
    sha256_text(text)                                   # hex digest of the UTF-8 encoding
    json_digest({"request": ..., "weights": ...})       # hex digest of a value as sorted-key JSON
    folder_digest(Path("out/medlama"))                  # one digest over every file's name and contents
    weights_digest(model_folder, cache_root())          # one digest over a model's weight files

A model is identified by the digest of its weight files (a results file's `weights_sha256`, the embedding
cache's space key, the publish check against a Hub repo's file metadata). Each weight file's sha256 is
remembered in `cache_root()/file-digests.json` by its path, inode, size and times, so a 400 MB model is
read once, not on every run.

"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

BLOCK = 1 << 20
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.gguf")
DIGESTS = "file-digests.json"
RACY_SECONDS = 3.0  # a weight file changed this recently is re-hashed on every load


def sha256_file(path: str | Path) -> str:
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_bytes(data: bytes) -> str:
    """The hex sha256 of bytes (a file already read whole for another reason)."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """The hex sha256 of a text's UTF-8 bytes (what a file of that text would hash to)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_digest(value: object) -> str:
    """The hex sha256 of a value as JSON with sorted keys (anything else as str): a key made of what it depends on
    (a run's request, an embedding space's parts, a card's content)."""
    return sha256_text(json.dumps(value, sort_keys=True, default=str))


def folder_digest(folder: Path) -> str:
    """One sha256 over the names and contents of every file under `folder` (what a profile run's data folder holds)."""
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())
    digest = hashlib.sha256()
    for name in names:
        digest.update(f"{name}\0{sha256_file(folder / name)}\n".encode())
    return digest.hexdigest()


# --- model weights -------------------------------------------------------------------------------


def cache_root() -> Path:
    """`$MEDPROBE_EMBEDDING_CACHE`, else `$HF_HOME/medprobe/embeddings`."""
    configured = os.environ.get("MEDPROBE_EMBEDDING_CACHE")
    if configured:
        return Path(configured).expanduser()
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "medprobe" / "embeddings"


def weight_files(folder: Path) -> list[Path]:
    """The weight files of a model folder (top level only: checkpoints in subfolders are other models)."""
    return sorted({path for pattern in WEIGHT_PATTERNS for path in folder.glob(pattern) if path.is_file()})


def file_digest(path: Path, known: dict[str, str]) -> str:
    """sha256 of a file's bytes, reused from `known` while its path, inode, size and times are unchanged.

    A file changed in the last few seconds is hashed but not remembered: file times are coarser
    than a quick rewrite (as git's "racy" index entries), so (size, mtime) alone could match a
    same-sized new version.
    """
    stat = path.stat()
    entry = f"{path.resolve()}|{stat.st_ino}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ctime_ns}"
    if entry in known:
        return known[entry]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 24), b""):
            digest.update(block)
    if time.time() - max(stat.st_mtime, stat.st_ctime) > RACY_SECONDS:
        known[entry] = digest.hexdigest()
    return digest.hexdigest()


def weights_digest(folder: Path, root: Path) -> str | None:
    """One sha256 over the names, sizes and contents of `folder`'s weight files (None: it has none).

    Per-file digests are remembered in `root/file-digests.json`, so a 400 MB model is read once. A
    results file records the same digest as the model's `weights_sha256` (medprobe.provenance).
    """
    weights = weight_file_digests(folder, root)
    return combined_digest(weights) if weights else None


def weight_file_digests(folder: Path, root: Path) -> dict[str, dict]:
    """{file name: {"size", "sha256"}} of `folder`'s weight files, per-file digests remembered under `root`."""
    return file_digests(weight_files(folder), root)


def file_digests(paths: Iterable[Path], root: Path) -> dict[str, dict]:
    """{file name: {"size", "sha256"}} of files, per-file digests remembered under `root` (see `file_digest`)."""
    known = read_digests(root)
    before = dict(known)
    digests = {path.name: {"size": path.stat().st_size, "sha256": file_digest(path, known)} for path in paths}
    if known != before:
        write_digests(root, known)
    return digests


def combined_digest(weights: dict[str, dict]) -> str:
    """One digest over weight files' names, sizes and sha256 (computable from a Hub repo's file metadata too)."""
    combined = hashlib.sha256()
    for name in sorted(weights):
        combined.update(f"{name}|{weights[name]['size']}|{weights[name]['sha256']}\n".encode())
    return combined.hexdigest()


def read_digests(root: Path) -> dict[str, str]:
    try:
        known = json.loads((root / DIGESTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def write_digests(root: Path, known: dict[str, str]) -> None:
    """Save the per-file digests, forgetting files that are gone (a best effort: failing costs a re-hash)."""
    kept = {entry: digest for entry, digest in known.items() if Path(entry.split("|")[0]).exists()}
    temp = root / f".{DIGESTS}.{os.getpid()}.tmp"  # renamed whole: a reader sees the old memo or the new one
    try:
        root.mkdir(parents=True, exist_ok=True)
        temp.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temp, root / DIGESTS)
    except OSError:
        temp.unlink(missing_ok=True)
