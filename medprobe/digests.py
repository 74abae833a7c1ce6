"""The sha256 digests medprobe records of files and texts: one helper for every writer and reader.

    sha256_file(Path("out/results.outcomes.jsonl"))   # hex digest of the bytes, read in 1 MiB blocks
    sha256_text(text)                                   # hex digest of the UTF-8 encoding

Imports (docs/architecture.md): the standard library only; every layer may import it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

BLOCK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    """The hex sha256 of a text's UTF-8 bytes (what a file of that text would hash to)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
