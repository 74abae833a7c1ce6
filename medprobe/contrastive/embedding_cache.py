"""An on-disk cache of [CLS] embeddings, so a model's names and queries are encoded once across runs.

Untuned Contrastive-Probe on MedLAMA full spends most of its time encoding the same 22,923 names
and 19,000 queries on every run; the hard set's queries are a subset of full's. This cache keeps
every encoded token-id sequence's embedding, so a second run of full, or hard after full, reads
them from disk (scripts/bench_embedding_cache.py has the figures).

Layout, under `cache_root()` (`$MEDPROBE_EMBEDDING_CACHE`, else `$HF_HOME/medprobe/embeddings`):

    file-digests.json            sha256 of each weight file seen, by (path, inode, size, times): a
                                 big model is hashed once, not on every run
    tokens/<key>.npz             the token ids of a list of texts (a run's names, its queries) under the
                                 digest of the texts, how they were tokenized and the tokenizer's files:
                                 a warm run neither loads the tokenizer nor tokenizes
    model-spaces.json            the space parts of each model identity (weights digest, config file,
                                 layers, dtype, device, versions) a run has loaded: a later run of
                                 the same model opens its space without loading the model, which it
                                 then loads only at its first miss (a warm run never does)
    <space>/space.json           what the space key was made of, among it the embeddings' width (the
                                 model's hidden size) and dtype (float32); read back only by `medprobe
                                 cache verify`, and only when its parts hash to the folder's name
    <space>/models.json          the models (packaged name, Hub id or absolute folder) that runs loaded
                                 this space's model from, the latest last: what `cache verify` loads to
                                 re-encode (never read by a probe)
    <space>/<checksum>.npz       one chunk per run that encoded something new: token ids (flat),
                                 their lengths, the float32 embeddings (rows in the same order) and
                                 a 64-bit digest of each entry (its token ids and its embedding row)

A *space* is everything an embedding depends on besides the text: the content of the model's
weight files, its config and class, the probed layers, the dtype, the device type, the torch and
transformers versions and `ENCODING_VERSION` (bumped when encode_cls changes what it returns). Its
folder name is the sha256 of those. Inside a space an entry's key is the token-id sequence the
encoder sees, which already covers the text, the tokenizer and the truncation (max length). So a
changed model (new weights saved to the same folder) gets a new space and never hits a stale
entry; a model without files (built in memory) or one changed in memory (rewired) has no space
and is not cached on disk at all.

A chunk's name is the checksum of its contents, checked on read: a truncated or corrupt chunk
(a killed write that escaped the atomic rename, a bad disk) is a miss and is deleted, never wrong
data or a crash. A checksum catches damage, not a chunk rewritten whole with a valid one, so what
can be checked cheaply is checked too: the arrays' dtypes, the embeddings' width against the
space's (a chunk of another model is a miss, not a matmul error), and each entry's digest, which
ties its embedding row to its key (rows shifted or swapped against their keys are a miss, not
silently wrong scores). Embeddings that were wrong when they were written (another model's of the
same width, stored under the right keys) cannot be told without encoding again: that is the trust
boundary, and `medprobe cache verify` (medprobe.contrastive.cache_verify) re-encodes a sample to catch it.

Chunks are written under a temporary name and renamed (medprobe.atomic), so processes sharing the
cache see whole chunks or none, and the same chunk written twice is the same file. The whole
cache is bounded (`$MEDPROBE_EMBEDDING_CACHE_MAX_GB`, default 2): after a write, the least
recently used chunks (by mtime; a hit touches its chunk) of all spaces are deleted until the
total fits.

Embeddings read back are bit-identical to the ones stored. They were encoded in the batches of the
run that stored them, so a run that hits may differ from a cold run in the last float bits (batch
padding changes the kernels' summation order), as two cold runs with different batch sizes do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from medprobe.atomic import DISK_ERRORS, atomic_output, write_text_atomically
from medprobe.contracts import UserError
from medprobe.digests import (  # noqa: F401 - the cache keys a model by its weights digest
    WEIGHT_PATTERNS,
    cache_root,
    combined_digest,
    file_digests,
    json_digest,
    weight_file_digests,
    weight_files,
    weights_digest,
)

ENCODING_VERSION = 1  # bump when encode_cls changes the embeddings it returns for the same ids
CHUNK_FORMAT = 2  # 2: chunks hold each entry's digest (a space part: chunks of format 1 are in other spaces)
DEFAULT_MAX_GB = 2.0
STALE_TEMP_SECONDS = 3600  # a temporary chunk older than this was left by a killed process
SPACES = "model-spaces.json"
TOKENS = "tokens"  # the folder of remembered token ids (looks like a space to eviction: its files count and go LRU)
REMEMBERED_SPACES = 256  # model identities kept in SPACES (the latest; a forgotten one costs one model load)
SPACE_PARTS = "space.json"
MODEL_SOURCES = "models.json"  # in a space's folder: where its model was loaded from (for cache verify)
REMEMBERED_SOURCES = 8  # models kept per space (the same weights in several folders; the latest last)

Key = tuple[int, ...]


def max_bytes() -> int:
    """The bound on the whole cache, from `$MEDPROBE_EMBEDDING_CACHE_MAX_GB` (default 2 GB)."""
    text = os.environ.get("MEDPROBE_EMBEDDING_CACHE_MAX_GB", "").strip()
    try:
        gigabytes = float(text) if text else DEFAULT_MAX_GB
    except ValueError:
        gigabytes = -1.0
    if not gigabytes >= 0:
        raise UserError(
            f"MEDPROBE_EMBEDDING_CACHE_MAX_GB={text!r} is not a size in GB; set a number such as 2 or 0.5, or unset it"
        )
    return int(gigabytes * 1e9)


# --- the space key ---------------------------------------------------------------------------------


def remembered_space(root: Path, identity: str) -> dict | None:
    """The space parts remembered for a model identity (medprobe.contrastive.prober.space_identity), or None."""
    try:
        spaces = json.loads((root / SPACES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    parts = spaces.get(identity) if isinstance(spaces, dict) else None
    return parts if isinstance(parts, dict) else None


def remember_space(root: Path, identity: str, parts: dict) -> None:
    """Remember the space parts a loaded model gave for `identity` (a best effort: failing costs a model load).

    Two processes writing at once may lose one's entry (the file is replaced whole and atomically, never
    torn): that run's model is loaded once more next time."""
    try:
        spaces = json.loads((root / SPACES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        spaces = {}
    if not isinstance(spaces, dict):
        spaces = {}
    spaces.pop(identity, None)
    spaces[identity] = parts  # the latest last: the oldest are forgotten first
    kept = dict(list(spaces.items())[-REMEMBERED_SPACES:])
    try:
        root.mkdir(parents=True, exist_ok=True)
        write_text_atomically(root / SPACES, json.dumps(kept, indent=1, default=str) + "\n")
    except OSError:
        pass


def remember_source(folder: Path, source: str) -> None:
    """Add `source` (how a run named the model: packaged name, Hub id or absolute folder) to the models a space
    was loaded from, so that `cache verify` can load it again (a best effort: failing leaves verify to `--model`)."""
    sources = model_sources(folder)
    if source in sources:
        return
    kept = [*sources, source][-REMEMBERED_SOURCES:]
    try:
        write_text_atomically(folder / MODEL_SOURCES, json.dumps(kept, indent=1) + "\n")
    except OSError:
        pass


def model_sources(folder: Path) -> list[str]:
    """The models a space was loaded from, the latest last ([] when none is recorded)."""
    try:
        sources = json.loads((folder / MODEL_SOURCES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [source for source in sources if isinstance(source, str)] if isinstance(sources, list) else []


def space_parts(folder: Path) -> dict | None:
    """The parts a space's folder was named for (its space.json), None when unreadable or when they do not hash
    to the folder's name (then they are not the parts its vectors were stored under)."""
    try:
        parts = json.loads((folder / SPACE_PARTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return parts if isinstance(parts, dict) and space_key(parts) == folder.name else None


# --- token ids ---------------------------------------------------------------------------------------


def tokens_key(tokenizer: str, how: str, texts: Sequence[str]) -> str:
    """The name of the token ids of `texts` (in order) as the tokenizer `tokenizer` (a digest) turned them
    into ids `how` (e.g. "names, cut at 25")."""
    digest = hashlib.sha256(f"{tokenizer}\n{how}\n{len(texts)}\n".encode())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def tokens_path(root: Path, key: str) -> Path:
    return root / TOKENS / f"{key}.npz"


def read_tokens(root: Path, key: str, count: int) -> list[tuple[int, ...]] | None:
    """The token ids stored under `key` (`count` sequences, each a tuple), or None: none stored, or damaged
    (then deleted)."""
    path = tokens_path(root, key)
    try:
        with np.load(path, allow_pickle=False) as data:
            ids, lengths, checksum = data["ids"], data["lengths"], data["checksum"]
    except FileNotFoundError:
        return None
    except Exception:  # whatever a damaged file raises: a miss, and gone so that it is rewritten
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    if (
        (ids.dtype, lengths.dtype) != (np.int64, np.int32)
        or lengths.shape != (count,)
        or int(lengths.sum()) != len(ids)
        or (lengths < 0).any()
        or str(checksum) != tokens_checksum(ids, lengths)
    ):
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    touch(path)  # just used: the last to be evicted
    flat, ends = tuple(ids.tolist()), np.cumsum(lengths).tolist()  # slices of a tuple are the cache's keys as they are
    return [flat[end - length : end] for end, length in zip(ends, lengths.tolist())]


def write_tokens(root: Path, key: str, sequences: Sequence[Sequence[int]]) -> None:
    """Store token ids under `key` (a best effort: failing costs tokenizing again). They count towards the
    cache's bound and are evicted with the embeddings, least recently used first."""
    lengths = np.array([len(ids) for ids in sequences], dtype=np.int32)
    ids = np.fromiter((token for seq in sequences for token in seq), dtype=np.int64, count=int(lengths.sum()))
    path = tokens_path(root, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as temp, open(temp, "wb") as handle:
            np.savez(handle, ids=ids, lengths=lengths, checksum=np.array(tokens_checksum(ids, lengths)))
    except OSError:
        return
    evict(root, max_bytes())


def tokens_checksum(ids: np.ndarray, lengths: np.ndarray) -> str:
    return hashlib.sha256(ids.tobytes() + b"|" + lengths.tobytes()).hexdigest()


def space_key(parts: dict) -> str:
    """The folder name of a space: sha256 over its parts, serialised deterministically."""
    return json_digest(parts)


# --- chunks ----------------------------------------------------------------------------------------


def chunk_checksum(ids: np.ndarray, lengths: np.ndarray, embeddings: np.ndarray, digests: np.ndarray) -> str:
    digest = hashlib.sha256()
    for array in (ids, lengths, embeddings, digests):
        digest.update(str((array.dtype.str, array.shape)).encode())
        digest.update(byte_view(array))
    return digest.hexdigest()[:32]


def entry_digests(ids: np.ndarray, lengths: np.ndarray, embeddings: np.ndarray) -> np.ndarray:
    """A 64-bit digest of each entry: its token ids (int64) and its embedding row (float32) together.

    Hashed from views of the arrays' bytes, not copies (a warm MedLAMA run checks 41,810 entries)."""
    ids_bytes, rows_bytes = byte_view(ids), byte_view(embeddings)
    id_size, row_size = ids.itemsize, embeddings.shape[1] * embeddings.itemsize if embeddings.ndim == 2 else 0
    parts = []
    for row, (end, length) in enumerate(zip(np.cumsum(lengths).tolist(), lengths.tolist())):
        entry = hashlib.blake2b(ids_bytes[(end - length) * id_size : end * id_size], digest_size=8)
        entry.update(rows_bytes[row * row_size : (row + 1) * row_size])
        parts.append(entry.digest())
    return np.frombuffer(b"".join(parts), dtype="<u8").astype(np.uint64)


def byte_view(array: np.ndarray) -> memoryview:
    """The bytes of `array` in C order, without a copy when it is contiguous already."""
    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def write_chunk(folder: Path, keys: Sequence[Key], embeddings: np.ndarray) -> Path:
    """Store `embeddings[i]` under `keys[i]` as one chunk named by its checksum; returns its path."""
    lengths = np.array([len(key) for key in keys], dtype=np.int32)
    ids = np.fromiter((token for key in keys for token in key), dtype=np.int64, count=int(lengths.sum()))
    embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
    digests = entry_digests(ids, lengths, embeddings)
    path = folder / f"{chunk_checksum(ids, lengths, embeddings, digests)}.npz"
    with atomic_output(path) as temp, open(temp, "wb") as handle:
        np.savez(handle, ids=ids, lengths=lengths, embeddings=embeddings, digests=digests)
    return path


def read_chunk(path: Path, width: int | None = None) -> tuple[list[Key], np.ndarray] | None:
    """(keys, embeddings) of a chunk, or None when it is unreadable, fails its checksum, holds arrays of
    other dtypes or embeddings of another `width` than the space's, or an entry fails its digest."""
    try:
        with np.load(path, allow_pickle=False) as data:
            ids, lengths, embeddings, digests = data["ids"], data["lengths"], data["embeddings"], data["digests"]
    except Exception:  # whatever a damaged file raises (zip, zlib, npy header, I/O, an array missing), it is a miss
        return None
    if (
        (ids.dtype, lengths.dtype, embeddings.dtype, digests.dtype) != (np.int64, np.int32, np.float32, np.uint64)
        or lengths.ndim != 1
        or embeddings.ndim != 2
        or len(lengths) != len(embeddings)
        or digests.shape != lengths.shape
        or int(lengths.sum()) != len(ids)
        or (lengths < 0).any()
        or (width is not None and embeddings.shape[1] != width)
        or chunk_checksum(ids, lengths, embeddings, digests) != path.stem
        or not np.array_equal(entry_digests(ids, lengths, embeddings), digests)
    ):
        return None
    flat = tuple(ids.tolist())
    keys = [flat[end - length : end] for end, length in zip(np.cumsum(lengths).tolist(), lengths.tolist())]
    return keys, embeddings


def chunk_files(folder: Path) -> list[Path]:
    """The finished chunks of a space (temporary files start with a dot)."""
    return sorted(path for path in folder.glob("*.npz") if not path.name.startswith("."))


# --- one space -------------------------------------------------------------------------------------


@dataclass
class Space:
    """The embeddings of one space, read once: an index of key -> (chunk, row) over its chunks."""

    folder: Path
    index: dict[Key, tuple[int, int]] = field(default_factory=dict)
    chunks: list[np.ndarray] = field(default_factory=list)
    paths: list[Path | None] = field(default_factory=list)  # None: only in memory (not written)
    writable: bool = True

    @property
    def key(self) -> str:
        return self.folder.name

    def positions(self, keys: Iterable[Key]) -> dict[Key, tuple[int, int]]:
        """Where the stored embeddings of those `keys` that are here lie: key -> (chunk, row), for
        `gather_rows(space.chunks, ...)`; their chunks count as just used."""
        found: dict[Key, tuple[int, int]] = {}
        for key in keys:
            where = self.index.get(key)
            if where is not None:
                found[key] = where
        for chunk in {chunk for chunk, _ in found.values()}:
            path = self.paths[chunk]
            if path is not None:
                touch(path)
        return found

    def add(self, keys: Sequence[Key], embeddings: np.ndarray, write: bool = True) -> None:
        """Add new embeddings; with `write`, store them as one chunk and evict old chunks of the whole
        cache beyond the bound (without, they are only remembered by this process).

        A cache that cannot be written (read-only, disk full) stops being written, with one warning;
        the run goes on.
        """
        if not keys:
            return
        embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
        path = None
        if write and self.writable:
            try:
                path = write_chunk(self.folder, keys, embeddings)
            except OSError as err:
                self.writable = False
                say_unwritable(self.folder.parent, err)
        self.remember(path, list(keys), embeddings)
        if path is not None:
            evict(self.folder.parent, max_bytes())

    def remember(self, path: Path | None, keys: list[Key], embeddings: np.ndarray) -> None:
        chunk = len(self.chunks)
        self.chunks.append(embeddings)
        self.paths.append(path)
        for row, key in enumerate(keys):
            self.index.setdefault(key, (chunk, row))


def gather_rows(blocks: Sequence[np.ndarray], positions: Sequence[tuple[int, int]]) -> np.ndarray:
    """`blocks[b][r]` for each (b, r) of `positions`, stacked: one fancy index per block, not one copy per row
    (stacking MedLAMA's 42,000 rows one by one was a visible part of a warm run: docs/scaling.md).

    Positions that are one whole block in order (a warm run reading back what one run stored) give that
    block itself, not a copy (faulting in a fresh copy's pages costs time too): read it, do not write
    into it."""
    if not positions:
        return np.zeros((0, blocks[0].shape[1] if blocks else 0), dtype=np.float32)
    where = np.array(positions, dtype=np.int64).reshape(-1, 2)
    used = np.unique(where[:, 0])
    if len(used) == 1:
        block = blocks[int(used[0])]
        if len(where) == len(block) and np.array_equal(where[:, 1], np.arange(len(block))):
            return block
        return block[where[:, 1]]
    rows = np.empty((len(where), blocks[int(used[0])].shape[1]), dtype=np.result_type(*(blocks[int(b)] for b in used)))
    for block in used.tolist():
        mine = where[:, 0] == block
        rows[mine] = blocks[block][where[mine, 1]]
    return rows


def open_space(root: Path, parts: dict) -> Space:
    """The space of `parts` under `root`, with every readable chunk indexed; bad chunks are deleted
    (among them chunks whose embeddings are not `parts["width"]` wide, when the parts say)."""
    folder = root / space_key(parts)
    space = Space(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / SPACE_PARTS).is_file():
            write_text_atomically(folder / SPACE_PARTS, json.dumps(parts, indent=2, sort_keys=True, default=str) + "\n")
    except OSError as err:
        space.writable = False
        say_unwritable(root, err)
    for path in chunk_files(folder):
        read = read_chunk(path, parts.get("width"))
        if read is None:  # truncated, corrupt or not of this space: a miss, and gone so that it is rewritten whole
            with contextlib.suppress(OSError):  # (a read-only cache keeps it, and misses it every time)
                path.unlink()
            continue
        space.remember(path, *read)
    return space


def say_unwritable(root: Path, err: OSError) -> None:
    """The one warning of a cache that cannot be written (full, read-only): it is the embedding cache, a cache, so
    the run goes on, encoding what it would have read; what to do so that the next run stores its vectors."""
    reason = DISK_ERRORS.get(err.errno) or err.strerror or str(err)
    print(
        f"embedding cache {root}: cannot write in it ({reason}); going on without storing: free space there, set "
        "MEDPROBE_EMBEDDING_CACHE to a folder on a disk with room, or pass --no-cache"
    )


# --- size and eviction -----------------------------------------------------------------------------


def touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass  # evicted meanwhile by another process: the data is already in memory


def cached_files(root: Path) -> list[tuple[float, int, Path]]:
    """(mtime, size, path) of every chunk under `root`; temporary chunks left by killed runs are deleted."""
    files = []
    now = time.time()
    for path in root.glob("*/*.npz"):
        try:
            stat = path.stat()
        except OSError:
            continue
        if path.name.startswith("."):
            if now - stat.st_mtime > STALE_TEMP_SECONDS:
                with contextlib.suppress(OSError):
                    path.unlink()
            continue
        files.append((stat.st_mtime, stat.st_size, path))
    return sorted(files)


def cache_size(root: Path) -> int:
    return sum(size for _, size, _ in cached_files(root))


def evict(root: Path, bound: int) -> int:
    """Delete the least recently used chunks until the cache holds at most `bound` bytes; returns its size."""
    files = cached_files(root)
    total = sum(size for _, size, _ in files)
    for _, size, path in files:
        if total <= bound:
            break
        with contextlib.suppress(OSError):  # gone already (another process evicted it), or not ours to delete
            path.unlink()
        total -= size
    return total


def describe_size(size: int) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB"
