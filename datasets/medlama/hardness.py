"""The hard subset: the published hardness rule and its check against the released hard files.

A query is hard when its answers cannot be read off the head name: the share of gold names
found in the head name (avg_match) and their mean ROUGE-L F with it (avg_rouge_l) are both
below HARD_THRESHOLD, computed the way the MedLAMA authors' notebook computed them. For the
release source, the rows the rule selects must be exactly the rows of the released hard files.
"""

from __future__ import annotations

from collections import Counter

from rouge_score import rouge_scorer, tokenizers

from .release import NAME_SEPARATOR, RELEASE_COLUMNS, MedlamaFormatError, check_distinct_rows, read_csv, row_key

HARD_THRESHOLD = 0.1


def release_reference_names(tail_names: str) -> list[str]:
    """The gold names as the MedLAMA authors compared them to the head name.

    Their notebook split the joined names on "||", not " || ", so each name keeps the spaces
    around the separator ("Bone " / " Bone "): a padded name cannot match at the very start or
    end of the head name. We mirror it because it decides which queries are "hard".
    """
    return tail_names.split(NAME_SEPARATOR.strip())


class _ReleaseRougeTokenizer(tokenizers.Tokenizer):
    """Lower-cased white-space words, each counted once.

    The authors scored with the `rouge` package, which lower-cases nothing itself (they did),
    splits sentences on "." and counts distinct words; this tokenizer gives rouge-score the
    same units.
    """

    def tokenize(self, text: str) -> list[str]:
        return list(dict.fromkeys(text.lower().replace(".", " ").split()))


_ROUGE = rouge_scorer.RougeScorer(["rougeL"], tokenizer=_ReleaseRougeTokenizer())


def avg_match(head_name: str, tail_names: str) -> float:
    """Share of gold names found inside the lower-cased head name."""
    names = release_reference_names(tail_names)
    return sum(name.lower() in head_name.lower() for name in names) / len(names)


def avg_rouge_l(head_name: str, tail_names: str) -> float:
    """Mean ROUGE-L F between the head name and each gold name."""
    names = release_reference_names(tail_names)
    total = 0.0
    for name in names:
        score = _ROUGE.score(name, head_name)["rougeL"]
        # The authors' F has 1e-8 in its denominator; it puts rows whose F is exactly 0.1 in hard.
        total += 2 * score.precision * score.recall / (score.precision + score.recall + 1e-8)
    return total / len(names)


def is_hard(match: float, rouge_l: float) -> bool:
    return match < HARD_THRESHOLD and rouge_l < HARD_THRESHOLD


def check_hard_rows(relation: str, full_path: str, hard_path: str, full_rows: list[dict]) -> None:
    """Stop unless the rows the rule selects are exactly the rows of the released hard file."""
    hard_raws = read_csv(hard_path, RELEASE_COLUMNS)
    check_distinct_rows(hard_path, hard_raws)  # else a repeated row would read as "absent from full"
    released = Counter(row_key(r) for r in hard_raws)
    full_keys = Counter(row_key(r["raw"]) for r in full_rows)
    absent = released - full_keys
    if absent:
        first = next(iter(absent))
        raise MedlamaFormatError(
            f"{hard_path}: {sum(absent.values())} row(s) are absent from {full_path} (every hard "
            f"row must be a row of the full file); first: head_cui={first[0]}, head_name={first[1]!r}"
        )
    derived = Counter(row_key(r["raw"]) for r in full_rows if r["hard"])
    only_derived, only_released = derived - released, released - derived
    if only_derived or only_released:
        lines = []
        for label, keys in (
            ("selected by the rule, not in the hard file", only_derived),
            ("in the hard file, not selected by the rule", only_released),
        ):
            for row in full_rows:
                if row_key(row["raw"]) in keys:
                    lines.append(
                        f"  {label}: {full_path} row {row['row_number']} head_name="
                        f"{row['raw']['head_name']!r} avg_match={row['avg_match']:.4f} "
                        f"avg_rouge_l={row['avg_rouge_l']:.4f}"
                    )
        raise MedlamaFormatError(
            f"the hard rule (avg_match < {HARD_THRESHOLD} and avg_rouge_l < {HARD_THRESHOLD}) "
            f"disagrees with {hard_path} on {len(lines)} row(s):\n" + "\n".join(lines[:50])
        )
