"""The `medprobe leaderboard` command: the output folder checked first, the runs read and ranked, the site written whole.

SITE is replaced in one swap (a lock beside it, a staging folder, one rename: medprobe.atomic_folder),
so a failed or killed build leaves the previous site as it was. A SITE that holds files a leaderboard
did not write is refused unless --overwrite.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from medprobe.atomic import UnwritableOutput
from medprobe.stats import RESAMPLES, SEED


def ours(out: Path) -> bool:
    """OUT holds a site a leaderboard wrote (its leaderboard.json is one)."""
    from medprobe.records.verify import RecordError, read_json_object

    try:
        data = read_json_object(out / "leaderboard.json", "a leaderboard")
    except RecordError:
        return False
    return "boards" in data and "medprobe" in data


def check_site(out: Path, overwrite: bool) -> None:
    """SITE can be replaced whole: not a file, a mount point or read-only, and holding only a previous leaderboard."""
    from medprobe.atomic_folder import check_output_folder

    check_output_folder(out)
    if out.is_dir() and any(out.iterdir()) and not overwrite and not ours(out):
        shown = ", ".join(sorted(p.name for p in out.iterdir())[:5])
        raise UnwritableOutput(
            f"--out {out} holds files a leaderboard did not write ({shown}); it is replaced whole: give a new or empty "
            "folder, or pass --overwrite"
        )


def write_site(out: Path, files: dict[str, str], overwrite: bool) -> None:
    """Every file into a staging folder beside SITE, then one swap (medprobe.atomic_folder.staged_folder): SITE is
    the old site or the new one, never half; checked again under the lock (another writer may have been first)."""
    from medprobe.atomic_folder import staged_folder

    with staged_folder(out, "leaderboard", refuse=lambda folder: check_site(folder, False), overwrite=overwrite) as site:
        for name, text in files.items():
            path = site.staged / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def build_leaderboard(
    sources: Sequence[str | Path],
    out: str | Path,
    *,
    include_samples: bool = False,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    overwrite: bool = False,
    workers: int | None = None,
    print_fn: Callable[[str], None] = print,
) -> dict:
    """Read every SOURCE, rank the boards, write SITE; returns what SITE/leaderboard.json holds."""
    from medprobe.comparison.compare import clean
    from medprobe.leaderboard.boards import leaderboard_data
    from medprobe.leaderboard.site import site_files
    from medprobe.leaderboard.sources import read_sources

    out = Path(out)
    check_site(out, overwrite)
    names = [str(source) for source in sources]
    runs, excluded = read_sources(names, include_samples=include_samples, workers=workers)
    data = clean(leaderboard_data(runs, excluded, resamples=resamples, seed=seed, sources=names))
    write_site(out, site_files(data), overwrite)
    for board in data["boards"]:
        separated = sum(test["separated"] for test in board["tests"])
        print_fn(
            f"{board['title']}: {len(board['rows'])} run(s), {separated} of {len(board['tests'])} pair(s) separated; "
            f"data: {board['data']['text']}"
        )
    if data["boards"]:
        print_fn(data["rule"])
    for item in data["excluded"]:
        print_fn(f"left out: {item['run']} ({item['source']}): {item['reason']}")
    print_fn(f"wrote {out / 'index.html'} and {out / 'leaderboard.json'}")
    return data
