"""The `medprobe compare` command: its outputs checked before any outcome is read (compare.json and compare.md
in --out, the forest plot, the HTML page), the comparison made, every output written all or nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medprobe.comparison.compare import compare
from medprobe.comparison.inputs import read_inputs
from medprobe.contracts import UserError
from medprobe.stats import RESAMPLES, SEED


@dataclass
class Outputs:
    out: str | None = None  # a folder for compare.json and compare.md
    plot: str | None = None  # the forest plot (any format matplotlib writes)
    html: str | None = None  # the self-contained HTML report
    overwrite: bool = False  # replace files medprobe did not write (in --out, at --plot or --html)


OUT_FILES = ("compare.json", "compare.md")


def previous_comparison(out: Path) -> dict[str, str]:
    """What an earlier `medprobe compare --out` recorded writing into `out` (compare.json names compare.md's sha256),
    or {} when its compare.json is not one (absent, a user's file, another tool's)."""
    from medprobe.records.verify import RecordError, read_json_object

    try:
        data = read_json_object(out / "compare.json", "a comparison")
    except RecordError:
        return {}
    files = data.get("files")
    if "comparisons" not in data or "medprobe" not in data or not isinstance(files, dict):
        return {}
    return {"compare.json": "", **{name: digest for name, digest in files.items() if name in OUT_FILES}}


def check_outputs(outputs: Outputs) -> None:
    """Every output can be written (and --plot's format drawn) before any outcome is read."""
    from medprobe.atomic import check_distinct_outputs, check_writable, refuse_foreign_files, refuse_unrecorded
    from medprobe.atomic_folder import check_output_folder
    from medprobe.marks import carries_mark
    from medprobe.records.tables import plot_format

    named: dict[str, str | Path | None] = {"--plot": outputs.plot, "--html": outputs.html}
    if outputs.out:
        out = Path(outputs.out)
        if out.exists() and not out.is_dir():
            raise UserError(f"--out {out} is a file; give a folder for compare.json and compare.md")
        check_output_folder(out)
        if not outputs.overwrite:
            refuse_unrecorded(out, previous_comparison(out), command="compare", only=OUT_FILES)
        named.update({"--out": out / "compare.json", "--out (compare.md)": out / "compare.md"})
    for option, path in named.items():
        if path:
            check_writable(path, option.split(" ")[0])
    check_distinct_outputs(named)
    if not outputs.overwrite:  # a plot or page medprobe drew carries its name (medprobe.marks); a user's file does not
        drawn = {"--plot": outputs.plot, "--html": outputs.html}
        refuse_foreign_files(drawn, lambda option, path: carries_mark(path), command="compare")
    if outputs.plot:
        plot_format(outputs.plot)


def write_outputs(comparison: dict, outputs: Outputs) -> list[Path]:
    """compare.json, compare.md, the plot and the HTML page: all written, or none (medprobe.atomic)."""
    from medprobe.atomic import write_all_atomically
    from medprobe.comparison.report import draw_forest, html_page, markdown
    from medprobe.digests import sha256_text
    from medprobe.records.tables import plot_format

    out = Path(outputs.out) if outputs.out else None
    table = markdown(comparison)
    recorded = {**comparison, "files": {"compare.md": sha256_text(table)}}  # what a later compare --out may replace
    text = json.dumps(recorded, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    writers = [
        (out and out / "compare.md", lambda temp: temp.write_text(table, encoding="utf-8")),
        (out and out / "compare.json", lambda temp: temp.write_text(text, encoding="utf-8")),
        (outputs.plot, lambda temp: draw_forest(comparison, temp, plot_format(outputs.plot))),
        (outputs.html, lambda temp: temp.write_text(html_page(comparison), encoding="utf-8")),
    ]
    return write_all_atomically(writers)


def run_compare(
    paths: Sequence[str],
    outputs: Outputs,
    *,
    intersect: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    print_fn: Any = print,
    allow_different_candidates: bool = False,
) -> dict:
    """`medprobe compare`: check, compare, write the outputs (all or nothing), print the tables."""
    from medprobe.comparison.report import markdown

    check_outputs(outputs)
    comparison = compare(
        read_inputs(paths),
        intersect=intersect,
        resamples=resamples,
        seed=seed,
        allow_different_candidates=allow_different_candidates,
    )
    written = write_outputs(comparison, outputs)  # compare.md renamed before compare.json, which names its sha256
    print_fn(markdown(comparison).rstrip("\n"))
    for path in sorted(written, key=lambda path: path.name != "compare.json"):
        print_fn(f"wrote {path}")
    return comparison
