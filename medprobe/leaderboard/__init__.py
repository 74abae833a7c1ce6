"""`medprobe leaderboard SOURCE... --out SITE`: boards of runs ranked by their headline, with the differences that are real.

    data = build_leaderboard(["runs/", "hub:me/results"], "site")   # SITE/index.html, models/, pairs/, leaderboard.json

The package: `sources` reads what the boards are built from (results files, profile folders, results
repos; every run through medprobe.records) and what is left out and why; `pairs` holds a pair's statistics
(per-item scores, paired difference, its one test, detectable difference); `ranks` tests every pair of a board
(Holm over all of them) and gives each run its rank interval and letters;
`boards` groups runs into boards and computes every row and pair; `site` draws the static pages from
that data alone; `build` is the command (its output folder written whole); `space` publishes a Space
that builds the same site from a results repo.
"""

__all__ = ["build_leaderboard"]


def __getattr__(name: str):
    """The command, imported on first use (importing the package imports no numpy)."""
    if name == "build_leaderboard":
        from medprobe.leaderboard.build import build_leaderboard

        return build_leaderboard
    raise AttributeError(f"module 'medprobe.leaderboard' has no attribute {name!r}")
