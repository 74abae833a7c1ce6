"""Tolerances for comparing float32 results that another CPU computes in another order.

A model's output, a sum or a dot product is a reduction, and its order depends on the instruction set torch
picks (AVX-512, AVX2, none: ATEN_CPU_CAPABILITY), the thread count (OMP_NUM_THREADS) and the batch shape (a
query alone or beside three others). Each order rounds differently: the result moves by a few units in the last
place (ulps) of the largest terms summed, not of the result. A result that is a difference of large terms (a
squared distance written |q|^2 - 2 q.n + |n|^2 of vectors of norm^2 32, about -0.0024) keeps that absolute error
while being near zero, so a relative tolerance of 1e-5 on it fails on another machine (issue 37: -0.002388 vs
-0.0023899). Compare such results with an absolute tolerance of a few ulps of the terms' magnitude
(`float32_atol`); keep exact equality for what every order computes alike (integer counts, ranks far from ties,
values exactly representable).
"""

from __future__ import annotations

import numpy as np

FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2**-23, about 1.19e-7: one ulp of 1.0
ULPS = 8  # measured: a reordered float32 reduction moves by up to 1 ulp of its terms here; 8 leaves room


def float32_atol(magnitude: float, ulps: int = ULPS) -> float:
    """An absolute tolerance for a float32 result computed from terms as large as `magnitude` (e.g. the sum of the
    squared norms of the vectors a distance is computed from): `ulps` units in the last place of that magnitude."""
    return ulps * FLOAT32_EPS * max(abs(float(magnitude)), 1.0)
