"""Time per phase and items per second, printed the same way by every benchmark under scripts/.

    from phases import Phases            # scripts/ is on sys.path when a script runs
    phases = Phases()
    with phases.phase("encode queries", items=19_000, unit="query"):
        ...
    print(phases.report())

A user reads from it where the time goes and what a GPU would change: the phases that are model
forward passes (encoding, scoring) scale with the accelerator; loading, tokenizing and writing do not.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Phase:
    name: str
    seconds: float
    items: int | None = None
    unit: str = "item"


class Phases:
    def __init__(self) -> None:
        self.done: list[Phase] = []

    @contextmanager
    def phase(self, name: str, items: int | None = None, unit: str = "item") -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start, items, unit)

    def add(self, name: str, seconds: float, items: int | None = None, unit: str = "item") -> None:
        self.done.append(Phase(name, seconds, items, unit))

    def report(self, title: str = "time per phase") -> str:
        total = sum(phase.seconds for phase in self.done) or 1.0
        lines = [f"{title}:", f"  {'phase':<34} {'seconds':>9} {'share':>6} {'items':>10} {'rate':>16}"]
        for phase in self.done:
            rate = f"{phase.items / phase.seconds:,.0f} {phase.unit}/s" if phase.items and phase.seconds > 0 else ""
            count = f"{phase.items:,}" if phase.items is not None else ""
            lines.append(f"  {phase.name:<34} {phase.seconds:>9.2f} {phase.seconds / total:>6.0%} {count:>10} {rate:>16}")
        return "\n".join(lines)
