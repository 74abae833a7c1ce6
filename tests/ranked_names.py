"""The names of a `rank` result: probers return (name, score) pairs per query (medprobe.contracts.RankingProber)."""


def names_of(ranked: list[list[tuple[str, float]]]) -> list[list[str]]:
    return [[name for name, _ in row] for row in ranked]
