"""The `medprobe leaderboard` command: the output folder checked first, the runs read and ranked, the site written whole.

SITE is replaced in one swap (a lock beside it, a staging folder, one rename: medprobe.atomic_folder),
so a failed or killed build leaves the previous site as it was. SITE/site-files.json records the sha256
of every file the build wrote; a SITE that holds a file a leaderboard did not write (a user's notes), or
one of its files edited since (a hand-edited index.html), is refused unless --overwrite, as build and
profile refuse theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from medprobe.atomic import UnwritableOutput
from medprobe.stats import RESAMPLES, SEED

SITE_FILES = "site-files.json"  # what the site's folder holds: the sha256 of every file a leaderboard wrote there


def recorded_files(out: Path) -> dict[str, str] | None:
    """Relative path -> sha256 of each file the leaderboard wrote in OUT (None: OUT holds no record of them)."""
    from medprobe.records.verify import RecordError, read_json_object

    try:
        data = read_json_object(out / SITE_FILES, "a leaderboard's record of its files")
    except RecordError:
        return None
    files = data.get("files")
    if data.get("written_by") != "medprobe leaderboard" or not isinstance(files, dict):
        return None
    return {str(name): str(digest) for name, digest in files.items()}


def check_site(out: Path, overwrite: bool) -> None:
    """SITE can be replaced whole: not a file, a mount point or read-only, and holding only the files a leaderboard
    wrote there, as it wrote them (SITE/site-files.json records their sha256): a user's file, or a page edited since,
    is refused unless `overwrite` (the swap would delete it)."""
    from medprobe.atomic_folder import check_output_folder, files_under, foreign_files, listing

    check_output_folder(out)
    if overwrite or not out.is_dir():
        return
    files = files_under(out)
    if not files:
        return
    recorded = recorded_files(out)
    if recorded is None:
        what = (
            f"a site of an older medprobe ({SITE_FILES}, the record of the files a leaderboard wrote, is missing)"
            if "leaderboard.json" in files
            else f"files a leaderboard did not write ({listing(files)})"
        )
        raise UnwritableOutput(f"--out {out} holds {what}; it is replaced whole: give a new or empty folder, or pass --overwrite")
    stray, changed = foreign_files(out, recorded, own=(SITE_FILES,))
    if stray:
        raise UnwritableOutput(
            f"--out {out} holds files a leaderboard did not write ({listing(stray, 10)}); a new site would delete them: "
            "move them away, or pass --overwrite"
        )
    if changed:
        raise UnwritableOutput(
            f"--out {out} holds files changed since the leaderboard wrote them ({listing(changed, 10)}); a new site would "
            "replace them: move your edits away, or pass --overwrite"
        )


def write_site(out: Path, files: dict[str, str], overwrite: bool) -> None:
    """Every file into a staging folder beside SITE, then one swap (medprobe.atomic_folder.staged_folder): SITE is
    the old site or the new one, never half; checked again under the lock (another writer may have been first).
    site-files.json, written last, records the sha256 of every file, so a later build knows its own files."""
    import json

    from medprobe.atomic_folder import staged_folder
    from medprobe.digests import sha256_file

    with staged_folder(out, "leaderboard", refuse=lambda folder: check_site(folder, False), overwrite=overwrite) as site:
        site.write_texts(files)
        digests = {name: sha256_file(site.staged / name) for name in sorted(files)}
        record = {"written_by": "medprobe leaderboard", "files": digests}
        (site.staged / SITE_FILES).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


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
