"""The 1-5 rating scale of the MedLAMA paper (Meng, Liu et al., ACL 2022, §5.3), with its definitions."""

from __future__ import annotations

SCALE: dict[int, str] = {
    5: "perfectly answers the query",
    4: "similar to the gold answer, could somehow be the answer",
    3: "related to the query but not correct",
    2: "same domain or slight relation",
    1: "completely unrelated",
}
LOWEST, HIGHEST = min(SCALE), max(SCALE)


def scale_markdown() -> str:
    """The scale as raters read it beside their sheet."""
    lines = [
        "# Rating scale",
        "",
        "Rate how well each prediction answers its query (the answer slot is [Y]):",
        "",
    ]
    lines += [f"- **{value}**: {text}" for value, text in SCALE.items()]
    return "\n".join(lines) + "\n"
