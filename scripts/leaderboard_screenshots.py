"""Screenshots of the leaderboard's pages for docs/leaderboard.md, at a desk's width (1280 px) and a phone's (390 px).

    python scripts/leaderboard_screenshots.py            # docs/leaderboard-{index,model,pair,compare}-{1280,390}.png
    python scripts/leaderboard_screenshots.py --out DIR  # somewhere else (the site and runs are kept in DIR/work)

One command, deterministic: made-up MedLAMA-hard-shaped runs (tests/synthetic_runs.py writes them as
`medprobe probe` does, every number from the outcomes; fixed seeds, fixed creation times and commands),
ranked by `medprobe leaderboard` (the board of four runs, two of them MiniLM with all layers and with
`--layers 3`, and a board of its own for `--exclude-head`), the compare report of the two MiniLM runs
(made at a fixed time), then each page opened in headless Chromium (tests/headless_chromium.py) at each
width, the whole page captured, cut at MAX_HEIGHT and its colours reduced to 64 so the PNGs stay small.
The same medprobe and Chromium give the same files. Needs Chromium (`apt-get install chromium`; .ci/run
installs it) and Pillow (a dependency of matplotlib, which medprobe installs).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
WIDTHS = (1280, 390)
MAX_HEIGHT = {1280: 1400, 390: 2400}  # px of the page kept from its top
CREATED = "2026-01-15T10:00:00+00:00"
RELATIONS = (
    "may_treat",
    "may_prevent",
    "occurs_after",
    "has_physiologic_effect",
    "disease_has_abnormal_cell",
    "gene_product_plays_role_in_biological_process",
)
QUERIES = 40  # per relation
# label -> (model, hit share, settings changed, the options its command adds)
RUNS = {
    "sapbert": ("sapbert", 0.42, {}, ""),
    "pubmedbert": ("pubmedbert", 0.36, {}, ""),
    "minilm": ("minilm", 0.20, {}, ""),
    "minilm-layers3": ("minilm", 0.07, {"layers": 3}, "--layers 3 "),
    "minilm-exclude-head": ("minilm", 0.26, {"exclude_head": True}, "--exclude-head "),
}


def write_runs(folder: Path) -> list[str]:
    """The made-up runs, as `runs/<label>.json` relative to `folder`'s parent (the pages show these paths)."""
    import numpy as np

    from synthetic_runs import MEDLAMA_SETTINGS, write_run

    ids = [f"{relation}-{row:04d}" for relation in RELATIONS for row in range(QUERIES)]
    groups = [item.rsplit("-", 1)[0] for item in ids]
    difficulty = np.random.default_rng(0).random(len(ids))  # models agree on the easy queries
    chance = {"acc@10": {"value": 0.0569, "method": "expected acc@k of a uniformly random order of each query's candidates"}}
    paths = []
    for seed, (label, (model, share, changed, options)) in enumerate(RUNS.items(), start=1):
        draw = np.random.default_rng(seed)
        hit = difficulty + draw.random(len(ids)) * 0.3 < share + 0.15
        ranks = np.where(hit, draw.integers(1, 11, len(ids)), np.nan).astype(float)
        path = Path("runs") / f"{label}.json"
        command = f"medprobe probe --prober contrastive --dataset out/medlama --config hard --model {model} {options}--out {path}"
        settings = {**MEDLAMA_SETTINGS, **changed}
        write_run(
            folder / path, ids, groups, {"rank": ranks}, model=model, settings=settings, created=CREATED, command=command,
            chance=chance, resamples=1000,
        )  # fmt: skip
        paths.append(str(path))
    return paths


def build_pages(work: Path) -> dict[str, Path]:
    """The site and the compare report in `work`; the page of each kind to photograph."""
    from medprobe.comparison.outputs import Outputs, run_compare
    from medprobe.comparison.report import html_page
    from medprobe.leaderboard.build import build_leaderboard

    os.chdir(work)  # the pages name the runs as given: runs/<label>.json
    runs = write_runs(work)
    data = build_leaderboard(runs, "site", overwrite=True, print_fn=lambda line: None)
    comparison = run_compare(["runs/minilm.json", "runs/minilm-layers3.json"], Outputs(), print_fn=lambda line: None)
    (work / "compare.html").write_text(html_page(comparison, made="2026-01-15 10:05 UTC"), encoding="utf-8")
    board = data["boards"][0]
    pair = next(index for index, pair in enumerate(board["pairs"]) if pair["upper"] == "minilm")  # all layers vs 3
    return {
        "index": work / "site" / "index.html",
        "model": work / "site" / "models" / "minilm.html",
        "pair": work / "site" / "pairs" / f"{board['id']}-{pair + 1}.html",
        "compare": work / "compare.html",
    }


def small_png(png: bytes, height: int) -> bytes:
    """The top `height` px of the screenshot, in 64 colours (no dithering: the same input, the same bytes)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    image = image.crop((0, 0, image.width, min(image.height, height)))
    reduced = image.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    reduced.save(out, format="PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs", help="where the PNGs go (default: docs/)")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(REPO_ROOT / "tests"), str(REPO_ROOT)]
    from headless_chromium import chromium_binary, render_all

    if chromium_binary() is None:
        print("needs headless Chromium: apt-get install -y chromium", file=sys.stderr)
        return 2
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="leaderboard-shots-") as folder:
        pages = build_pages(Path(folder))
        for width in WIDTHS:
            shots = render_all(list(pages.values()), width=width, mobile=width < 600, screenshot=True)
            for (name, _), shot in zip(pages.items(), shots):
                if shot.errors:
                    raise SystemExit(f"{name} at {width} px logged errors: {shot.errors}")
                target = out / f"leaderboard-{name}-{width}.png"
                target.write_bytes(small_png(shot.png, MAX_HEIGHT[width]))
                print(f"wrote {target} ({target.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
