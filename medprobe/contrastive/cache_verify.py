"""`medprobe cache verify`: re-encode a seeded sample of the embedding cache's texts and drop the chunks that disagree.

The trust boundary. What a probe checks when it reads a chunk (medprobe.contrastive.embedding_cache) catches
damage: a torn or killed write, bit rot, rows shifted against their keys, a chunk of another model (another
width) or a mixed chunk — each fails the checksum the chunk is named by, an entry's digest or the space's width,
and is a miss. It cannot catch a chunk whose vectors were replaced and whose checksum and digests were computed
anew (by hand, by another tool, by a bug that stored another model's vectors under the right keys): every check
that reads only the file passes, and the probe ranks with those vectors. Only the model can say what a text's
vector is, so this loads the model each space names, re-encodes a sample of its cached texts through the
prober's own path (`ContrastiveProbe._encode_all`, the encoding a cache miss gets) and compares.

The sample is seeded and spread over the chunks (round robin over each chunk's shuffled texts), so every chunk
is checked once the sample is at least the number of chunks: a chunk forged whole is caught for certain; a single
vector forged inside a large chunk only by a sample that draws it (`--sample all` re-encodes everything).

Every chunk that disagrees is dropped together, after the whole cache was checked, or none is (`drop_chunks`):
a failed or interrupted verify leaves the cache as it was. A dropped chunk is a miss: the next probe encodes
its texts again and stores them whole.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from medprobe.atomic import signals_deferred
from medprobe.contracts import UserError
from medprobe.contrastive import embedding_cache
from medprobe.contrastive.embedding_cache import Key
from medprobe.contrastive.prober import ContrastiveProbe, model_files_digest, model_folder
from medprobe.digests import read_digests
from medprobe.models import resolve_model

DEFAULT_SAMPLE = 256  # texts per space: seconds of MiniLM on a CPU; every chunk is drawn from while there are fewer
# The largest relative L2 difference ||stored - again|| / ||again|| that is still the same vector, by the dtype the
# space was encoded in. A stored vector was encoded in the batches of the run that stored it and is re-encoded here
# in other batches: padding and batch companions change the kernels' summation order, so the same model on the same
# device gives vectors that differ in their last bits. Measured with scripts/measure_cache_tolerance.py (MiniLM, the
# shipped sample's 434 queries and names, batch sizes 1 to 128, shuffled; 2-core CPU): float32 at most 6.6e-7,
# bfloat16 at most 9.9e-3; two different texts' vectors were at least 0.166 apart. Each bound is ~10x (float32:
# 150x) the noise and well under the gap between texts. float16 (GPU only, not measured here) is bfloat16's scaled
# by the two formats' precision (8x finer). float32 on a GPU keeps full-precision matmuls by default (no TF32).
TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2, "float16": 1e-2}
DROPPED_SUFFIX = "-dropped.npz"  # a chunk on its way out: a hidden name, never read by a probe


@dataclass
class Verdict:
    """A chunk to drop, and why."""

    path: Path
    model: str
    reason: str


@dataclass
class Report:
    models: set[str] = field(default_factory=set)  # weights digests of the models checked
    spaces: int = 0
    texts: int = 0
    dropped: list[Verdict] = field(default_factory=list)
    skipped: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        dropped = f"{len(self.dropped)} chunk{'s' * (len(self.dropped) != 1)} dropped"
        if self.dropped:
            dropped += " (a probe encodes their texts again)"
        return (
            f"cache verify: {len(self.models)} model{'s' * (len(self.models) != 1)} checked ({self.spaces} "
            f"space{'s' * (self.spaces != 1)}), {self.texts:,} texts re-encoded, {dropped}, "
            f"{self.skipped} skipped, {self.seconds:.1f} s"
        )


def verify_cache(
    root: Path, *, sample: int | None = DEFAULT_SAMPLE, seed: int = 0, model: str | None = None, show_progress: bool = True
) -> Report:
    """Check the spaces of the cache at `root` (only `model`'s, when given): re-encode `sample` texts of each (None:
    all), drop every chunk holding a vector that disagrees, print one line per dropped chunk and per skipped space."""
    start = time.perf_counter()
    report = Report()
    with cache_root_at(root):  # the prober reads its remembered digests and spaces there too
        spaces = cached_spaces(root)
        targets = spaces_of(model, spaces, root) if model else [(folder, parts, []) for folder, parts in spaces]
        bad: list[Verdict] = []
        for folder, parts, sources in targets:
            bad += verify_space(folder, parts, sources, report, sample=sample, seed=seed, show_progress=show_progress)
        drop_chunks([verdict.path for verdict in bad])
    for verdict in bad:
        print(f"dropped {verdict.path.relative_to(root)} ({verdict.model}): {verdict.reason}")
    report.dropped, report.seconds = bad, time.perf_counter() - start
    return report


@contextlib.contextmanager
def cache_root_at(root: Path) -> Iterator[None]:
    """`embedding_cache.cache_root()` is `root` for a while."""
    before = os.environ.get("MEDPROBE_EMBEDDING_CACHE")
    os.environ["MEDPROBE_EMBEDDING_CACHE"] = str(root)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MEDPROBE_EMBEDDING_CACHE", None)
        else:
            os.environ["MEDPROBE_EMBEDDING_CACHE"] = before


def cached_spaces(root: Path) -> list[tuple[Path, dict | None]]:
    """(folder, parts) of every space under `root` that holds chunks (parts None: its space.json is unreadable)."""
    folders = (
        sorted(path for path in root.iterdir() if path.is_dir() and path.name != embedding_cache.TOKENS) if root.is_dir() else []
    )
    spaces = [(folder, embedding_cache.space_parts(folder)) for folder in folders if embedding_cache.chunk_files(folder)]
    if not spaces:
        raise UserError(
            f"no embedding cache at {root}: nothing to verify (a probe with --prober contrastive fills it; "
            "give --cache DIR or set MEDPROBE_EMBEDDING_CACHE for another one)"
        )
    return spaces


def spaces_of(model: str, spaces: list[tuple[Path, dict | None]], root: Path) -> list[tuple[Path, dict | None, list[str]]]:
    """The spaces of `model` (by its weights' digest), each with `model` as the one source to load."""
    path, _ = resolve_model(model)  # a folder that does not exist, or holds no model: one line
    if local_folder(path) is None:
        raise UserError(
            f"--model {model!r} is not a model folder, a packaged model or a Hub id in the local Hub cache; "
            "give the model whose cached vectors to verify (verify never downloads)"
        )
    digest = model_files_digest(path)
    mine = [(folder, parts, [model]) for folder, parts in spaces if parts and digest and parts.get("weights") == digest]
    if not mine:
        raise UserError(
            f"the embedding cache at {root} holds no vectors of {model}: nothing to verify (run without --model to check every model)"
        )
    return mine


def local_folder(path: str) -> Path | None:
    """The folder of a resolved model here (a Hub id's cached snapshot), None when there is none."""
    try:
        return model_folder(path)
    except ValueError:  # not even a valid Hub id (huggingface_hub's HFValidationError)
        return None


def verify_space(
    folder: Path, parts: dict | None, sources: list[str], report: Report, *, sample: int | None, seed: int, show_progress: bool
) -> list[Verdict]:
    """The chunks of one space to drop; a space whose model cannot be loaded here is skipped with one line."""
    probe, why = space_probe(folder, parts, sources, show_progress)
    if probe is None:
        named = [*sources, *reversed(embedding_cache.model_sources(folder))]
        print(f"skipped space {folder.name[:8]}…{f' ({named[0]})' if named else ''}: {why}")
        report.skipped += 1
        return []
    assert parts is not None  # space_probe loads nothing without them
    name = probe.model_name
    bad, readable = [], []
    for path in embedding_cache.chunk_files(folder):
        read = embedding_cache.read_chunk(path, parts.get("width"))
        if read is None and path.exists():  # what a probe would drop on reading it anyway (gone: evicted meanwhile)
            bad.append(Verdict(path, name, "damaged (fails its checksum, an entry's digest or the space's width)"))
        elif read is not None:
            readable.append((path, *read))
    keys = choose_keys([keys for _, keys, _ in readable], sample, random.Random(f"{seed}|{folder.name}"))
    fresh = probe._encode_all(keys, f"verifying {name}").numpy() if keys else np.zeros((0, 0), dtype=np.float32)
    tolerance = TOLERANCE.get(str(parts.get("dtype")), max(TOLERANCE.values()))
    row_of = {key: row for row, key in enumerate(keys)}
    for path, chunk_keys, embeddings in readable:
        reason = disagreement(chunk_keys, embeddings, fresh, row_of, tolerance)
        if reason:
            bad.append(Verdict(path, name, reason))
    report.models.add(str(parts.get("weights")))
    report.spaces += 1
    report.texts += len(keys)
    return bad


def space_probe(folder: Path, parts: dict | None, sources: list[str], show_progress: bool) -> tuple[ContrastiveProbe | None, str]:
    """A prober that encodes exactly as the space's vectors were encoded (same weights, config, layers, dtype,
    device, versions), loaded from `sources` or the models the space recorded; else (None, why not)."""
    if parts is None:
        return (
            None,
            f"its {embedding_cache.SPACE_PARTS} is missing or not the folder's, so its model is unknown (delete {folder} to empty it)",
        )
    why = unusable_here(parts)
    if why:
        return None, why
    why = "no record of the model it was encoded with (a cache written by an older medprobe): give --model M"
    for source in sources or recorded_sources(folder, parts):
        missing = unavailable(source)
        if missing:
            why = missing
            continue
        try:
            probe = ContrastiveProbe.from_pretrained(
                source,
                layers=parts.get("layers"),
                dtype=str(parts.get("dtype")),
                device=str(parts.get("device")),
                show_progress=show_progress,
            )
            probe.model  # noqa: B018 (loaded now: its space parts are compared below)
        except (UserError, OSError) as err:
            why = f"its model {source} does not load here ({err})"
            continue
        if probe.weights_digest != parts.get("weights"):
            why = f"the weights of {source} changed since it was encoded (a probe of it uses another space)"
        elif probe._space_parts() != parts:
            why = f"{source} now loads as another space (its config or class changed)"
        else:
            return probe, ""
    return None, why


def recorded_sources(folder: Path, parts: dict) -> Iterator[str]:
    """The models a space recorded, the latest first; then, for a space written before spaces recorded them,
    the folders whose weight files the cache has hashed and whose digest is the space's (looked up only then)."""
    yield from reversed(embedding_cache.model_sources(folder))
    yield from local_models(folder.parent).get(str(parts.get("weights")), [])


def unusable_here(parts: dict) -> str | None:
    """Why no probe here could read this space (nor re-encode its vectors within the tolerance), or None."""
    import transformers

    here = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "encoding_version": embedding_cache.ENCODING_VERSION,
        "chunk_format": embedding_cache.CHUNK_FORMAT,
    }
    changed = [f"{name} {parts.get(name)} (here {value})" for name, value in here.items() if parts.get(name) != value]
    if changed:
        return f"encoded with {', '.join(changed)}: no probe here reads it; verify it where it was written"
    if parts.get("device") == "cuda" and not torch.cuda.is_available():
        return "encoded on a CUDA GPU and there is none here; verify it where it was written"
    if parts.get("device") not in ("cpu", "cuda"):
        return f"encoded on a {parts.get('device')} device; verify it where it was written"
    return None


def unavailable(source: str) -> str | None:
    """Why the model `source` (as a run recorded it) cannot be loaded here, or None."""
    if Path(source).is_absolute() and not Path(source).is_dir():
        return f"its model folder {source} is gone"
    try:
        path, _ = resolve_model(source)
    except (FileNotFoundError, NotADirectoryError) as err:
        return f"its model {source} is not available here ({err})"
    if local_folder(path) is None:
        return f"its model {source} is not in the local Hub cache (verify never downloads)"
    return None


def local_models(root: Path) -> dict[str, list[str]]:
    """Model folders by weights digest, among the folders whose files the cache has hashed (file-digests.json):
    where to find the model of a space written before spaces recorded their models."""
    folders = {Path(entry.split("|")[0]).parent for entry in read_digests(root)}
    found: dict[str, list[str]] = {}
    for folder in sorted(folder for folder in folders if folder.is_dir()):
        digest = embedding_cache.weights_digest(folder, root)
        if digest is not None:
            found.setdefault(digest, []).append(str(folder))
    return found


def choose_keys(chunk_keys: Sequence[list[Key]], sample: int | None, rng: random.Random) -> list[Key]:
    """`sample` distinct keys (None: all), drawn round robin over the chunks' shuffled keys (the chunks in a shuffled
    order too), so that every chunk is drawn from once the sample is at least the number of chunks."""
    if sample is None:
        return list(dict.fromkeys(key for keys in chunk_keys for key in keys))
    queues = [rng.sample(keys, len(keys)) for keys in chunk_keys]
    rng.shuffle(queues)  # a sample smaller than the number of chunks draws a seeded choice of them, not the first
    chosen: dict[Key, None] = {}
    while len(chosen) < sample and any(queues):
        for queue in queues:
            while queue and queue[-1] in chosen:  # in an earlier chunk too: already drawn
                queue.pop()
            if queue and len(chosen) < sample:
                chosen[queue.pop()] = None
    return list(chosen)


def disagreement(keys: list[Key], embeddings: np.ndarray, fresh: np.ndarray, row_of: dict[Key, int], tolerance: float) -> str:
    """Why a chunk's vectors disagree with the re-encoded ones ("": they agree, or none was re-encoded)."""
    rows = [(row, row_of[key]) for row, key in enumerate(keys) if key in row_of]
    if not rows:
        return ""
    stored = embeddings[[row for row, _ in rows]].astype(np.float64)
    again = fresh[[row for _, row in rows]].astype(np.float64)
    difference = np.linalg.norm(stored - again, axis=1) / np.maximum(np.linalg.norm(again, axis=1), 1e-12)
    difference = np.where(np.isnan(difference), np.inf, difference)  # a NaN vector disagrees
    wrong = difference > tolerance
    if not wrong.any():
        return ""
    return (
        f"{int(wrong.sum())} of {len(rows)} re-encoded vectors disagree "
        f"(relative difference up to {difference.max():.1e}, tolerance {tolerance:.0e})"
    )


def drop_chunks(paths: Sequence[Path]) -> None:
    """Delete the chunks all together or not at all.

    Each is first renamed to a hidden name in its folder (a probe lists no hidden chunk: from then on it is a
    miss); only when every rename succeeded are they deleted. A rename that fails puts the renamed ones back
    and ends in one line: the cache is as it was. SIGINT and SIGTERM wait until the drop is done (the renames
    take milliseconds, and the drop is verify's last step). A hidden chunk that a kill -9 leaves is a stale
    temporary file, which the next probe's eviction deletes.
    """
    staged: list[tuple[Path, Path]] = []
    with signals_deferred():
        try:
            for path in paths:
                hidden = path.with_name(f".{path.stem}{DROPPED_SUFFIX}")
                try:
                    os.replace(path, hidden)
                except FileNotFoundError:  # evicted meanwhile by a probe: dropped already
                    continue
                staged.append((path, hidden))
        except BaseException as err:
            restore(staged)
            if isinstance(err, OSError):
                raise UserError(
                    f"could not drop {path} ({err.strerror or err}); the cache is as it was: "
                    f"make {path.parent} writable and run medprobe cache verify again"
                ) from err
            raise
        for _, hidden in staged:
            with contextlib.suppress(OSError):  # left behind, it is a stale temporary file: eviction deletes it
                hidden.unlink()


def restore(staged: list[tuple[Path, Path]]) -> None:
    """Put renamed chunks back (one that a probe's eviction took meanwhile stays gone: a miss, never wrong data)."""
    for path, hidden in reversed(staged):
        with contextlib.suppress(OSError):
            os.replace(hidden, path)
