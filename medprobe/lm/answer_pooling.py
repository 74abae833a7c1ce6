"""Turn generated answer strings into a ranked prediction list (mask predict, generative).

Generating probers produce strings, not picks from the answer space. Predictions are merged
when they are equal after BioLAMA-style normalisation (lower case, no punctuation, no articles,
single spaces), keeping the best score. The candidate list, when given, is used to *name*
predictions: a prediction that normalises to a candidate is reported as that candidate's
exact string (so an uncased model's "atypical meningioma" can match the gold
"Atypical meningioma" under the exact-match metric). With `only_candidates` predictions
outside the candidate list are dropped; otherwise they stay in the ranking (as misses).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans({char: " " for char in string.punctuation})


def normalise_answer(text: str) -> str:
    """Lower case, punctuation and articles removed, white space collapsed."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def pool_predictions(
    scored: Iterable[tuple[str, float]],
    candidates: Sequence[str] = (),
    only_candidates: bool = False,
) -> list[tuple[str, float]]:
    """(name, score) best first: duplicates merged after normalisation, named by the candidates."""
    canonical: dict[str, str] = {}
    for name in candidates:
        canonical.setdefault(normalise_answer(name), name)  # first in candidate order wins a clash
    best: dict[str, tuple[str, float]] = {}
    for text, score in sorted(scored, key=lambda item: -item[1]):  # stable: ties keep generation order
        key = normalise_answer(text)
        if not key or key in best or (only_candidates and key not in canonical):
            continue
        best[key] = (canonical.get(key, text.strip()), score)
    return list(best.values())
