"""medprobe's name in the files it writes for people to open (plots, HTML pages), and reading it back.

A results JSON shows it is medprobe's by its fields, and the files written with it by the sha256 it records; a
plot or an HTML page named by --plot or --html has neither, and the same path may be drawn again by any later
run. So medprobe writes its name where each format keeps the name of the program that made it, and a later
command replaces an existing file at such a path only when that name is there (or under --overwrite):

    fig.savefig(path, format=fmt, metadata=figure_metadata(fmt))   # PNG Software, PDF/SVG/PostScript Creator
    f"<meta name=\"generator\" content=\"{GENERATOR}\">"             # in an HTML page's <head>
    carries_mark(path)                                              # True: a file medprobe drew or wrote

JPEG, TIFF, WebP, AVIF, GIF, PGF and raw pixels keep no such name through matplotlib: an existing file of
those formats is never taken for medprobe's by its content (a run's own plot still is, by its record's sha256).
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

GENERATOR = "medprobe"  # the program name written into each marked file

# format -> the metadata key matplotlib writes the program's name under
METADATA_KEY = {"png": "Software", "pdf": "Creator", "svg": "Creator", "svgz": "Creator", "eps": "Creator", "ps": "Creator"}

# how the name reads in each format's bytes (ASCII, uncompressed: the PNG tEXt chunk, the PDF Info dictionary, the
# SVG Dublin Core creator, the PostScript DSC comment, the HTML generator tag)
MARKS = {
    "png": re.compile(rb"tEXtSoftware\x00" + GENERATOR.encode()),
    "pdf": re.compile(rb"/Creator \(" + GENERATOR.encode()),
    "svg": re.compile(rb"<dc:creator>\s*<cc:Agent>\s*<dc:title>" + GENERATOR.encode()),
    "eps": re.compile(rb"%%Creator: " + GENERATOR.encode()),
    "html": re.compile(rb'<meta name="generator" content="' + GENERATOR.encode()),
}
MARKS.update({"svgz": MARKS["svg"], "ps": MARKS["eps"], "htm": MARKS["html"]})
READ = 1 << 20  # bytes read at each end of a file: the mark sits in the first few kB (PDF: near the end)


def figure_metadata(fmt: str) -> dict[str, str] | None:
    """savefig's `metadata` for an image of format `fmt`: medprobe's name where the format keeps one, else None
    (matplotlib refuses metadata for the formats that keep none)."""
    key = METADATA_KEY.get(fmt.lower())
    return {key: GENERATOR} if key else None


def generator_meta() -> str:
    """The <meta> line of an HTML page medprobe writes."""
    return f'<meta name="generator" content="{GENERATOR}">'


def carries_mark(path: str | Path) -> bool:
    """Whether the file at `path` carries medprobe's name (a plot or page medprobe wrote); False for a format that
    keeps none, a file that cannot be read, or one made by anything else."""
    path = Path(path)
    fmt = path.suffix[1:].lower() or "png"  # a --plot path without a suffix is drawn as PNG
    mark = MARKS.get(fmt)
    if mark is None:
        return False
    try:
        if fmt == "svgz":
            with gzip.open(path, "rb") as handle:
                ends = [handle.read(READ)]
        else:
            with open(path, "rb") as handle:
                head = handle.read(READ)
                size = handle.seek(0, 2)
                handle.seek(max(len(head), size - READ))
                ends = [head, handle.read(READ)]
    except (OSError, EOFError):  # unreadable, or not gzip: not a file medprobe wrote
        return False
    return any(mark.search(part) for part in ends)
