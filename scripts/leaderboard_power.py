"""How often a leaderboard separates runs that truly differ, by simulation (issue 38): the table in docs/leaderboard.md.

    python scripts/leaderboard_power.py            # prints the table
    python scripts/leaderboard_power.py --write    # and writes it into docs/leaderboard.md between its markers

Boards of 6 runs whose true acc@k step down by a known gap (40%, 40% - gap, ..., 5 gaps from top to bottom), each
run's queries hit independently (the least favourable case: the most discordant queries), tested as
`medprobe leaderboard` tests a board: the exact McNemar test of every pair from one matrix product of the
outcomes, Holm over all 15 pairs, α 0.05 (medprobe.mcnemar, medprobe.stats.holm_array). For each gap and number of
queries, the share of boards (of BOARDS, seeded) that separate neighbours (one gap apart), runs two gaps apart, and
the top from the bottom run; with no gap, the share of boards that claim any separation at all (at most 0.05).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from medprobe.mcnemar import discordant_counts, mcnemar_p
from medprobe.stats import holm_array

RUNS = 6
BOARDS = 1000
CHUNK = 50  # boards drawn at once
TOP = 0.40
QUERIES = (500, 2000, 15329)  # 15,329: MedLAMA hard
GAPS = (0.0, 0.005, 0.01, 0.02, 0.05)
PAGE = Path(__file__).resolve().parents[1] / "docs" / "leaderboard.md"
BEGIN = "<!-- power table: written by scripts/leaderboard_power.py --write; do not edit by hand -->"
END = "<!-- end of power table -->"


def separated_boards(queries: int, gap: float, seed: int) -> np.ndarray:
    """BOARDS x runs x runs: whether each simulated board separates each pair (Holm over its pairs < 0.05)."""
    rng = np.random.default_rng(seed)
    accuracy = TOP - gap * np.arange(RUNS)
    upper = np.triu_indices(RUNS, 1)
    found = []
    for _ in range(0, BOARDS, CHUNK):
        hits = rng.random((CHUNK, RUNS, queries), dtype=np.float32) < accuracy[None, :, None]
        counts = discordant_counts(hits)
        p = mcnemar_p(counts[:, upper[0], upper[1]], counts[:, upper[1], upper[0]])
        separated = np.zeros((CHUNK, RUNS, RUNS), dtype=bool)
        separated[:, upper[0], upper[1]] = holm_array(p) < 0.05
        found.append(separated)
    return np.concatenate(found)


def share_apart(separated: np.ndarray, apart: int) -> float:
    """The share of pairs `apart` ranks apart that the boards separate."""
    return float(np.mean([separated[:, i, i + apart] for i in range(RUNS - apart)]))


HEADER = [
    f"| gap (points) | queries | neighbours separated | two gaps apart | top vs bottom ({RUNS - 1} gaps) |",
    "|---:|---:|---:|---:|---:|",
]


def row(gap: float, queries: int) -> str:
    """One line of the table; each cell has its own seed, so any line can be recomputed alone (the docs test does)."""
    separated = separated_boards(queries, gap, seed=queries + int(round(gap * 1000)))
    if gap == 0:
        return f"| 0 | {queries:,} | any separation claimed: {float(separated.any(axis=(1, 2)).mean()):.3f} | | |"
    cells = [f"{share_apart(separated, apart):.2f}" for apart in (1, 2, RUNS - 1)]
    return f"| {100 * gap:g} | {queries:,} | " + " | ".join(cells) + " |"


def table() -> list[str]:
    return [*HEADER, *(row(gap, queries) for gap in GAPS for queries in QUERIES)]


def block(lines: list[str]) -> str:
    return "\n".join([BEGIN, "", *lines, "", END])


def write(page: Path, lines: list[str]) -> None:
    text = page.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        sys.exit(f"{page}: no power table markers ({BEGIN!r} ... {END!r}) to write between")
    head, rest = text.split(BEGIN, 1)
    page.write_text(head + block(lines) + rest.split(END, 1)[1], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"write the table into {PAGE.name} between its markers")
    args = parser.parse_args(argv)
    lines = table()
    print("\n".join(lines))
    if args.write:
        write(PAGE, lines)
        print(f"wrote the table into {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
