"""One module per benchmark task, each a class with the same five steps (the task contract):

    task = MedLAMATask(**task_options)           # the task's options, from the registry (its defaults are the defaults)
    data = task.load(dataset, config, split)      # load_dataset + field checks + subsets, before any model loads
    outputs = task.predict(prober, data, seed)    # the prober answers (ranks, scores, trains per disease, ...)
    scored = task.score(data, outputs)            # the task's evaluate metric -> metrics, per_group, counts,
                                                  # and the per-item outcomes and chance levels
    print(task.table(record))                     # the task's table of a RunRecord

Every built-in task subclasses `medprobe.tasks.base.BenchmarkTask` (the shared loading, field check,
subset note, metric and predictions writer; its FIELDS, METRIC and GROUP_BY) and keeps only its
differences. `medprobe.run.run` is the one loop that calls these steps for every task; `task.writers(data, outputs)`
names the extra files a run writes (e.g. --predictions), written all-or-nothing with the results JSON.

Reportable numbers: `scored.outcomes` holds one row per item (a query, an instance, a test pair)
and `Task.estimators(settings)` recomputes each overall metric from those rows (medprobe.stats), so
the run can bootstrap its intervals and `medprobe compare` can pair two runs from their files
alone. `task.loaded` lists the (config, split) pairs `load` read, for the data fingerprint; a task
whose options probe a subset (registry `Option(subset=True)`) sets `task.subset_of` in `load` to
what was kept of what ({"probed": 190, "total": 15329, "unit": "queries"}), recorded in the run's
`subset` so that a published number can say "190 of 15,329 queries".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from medprobe.stats import Estimator, Outcomes


@dataclass
class Scored:
    """What a task's `score` returns; `run` turns it into a RunRecord."""

    metrics: dict
    per_group: dict
    counts: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)  # the task's settings, recorded beside the prober's
    seed: int | None = None  # the seed the run really used, when the task derives it (e.g. a default)
    plot_per_group: dict | None = None  # the groups to plot, when not all of per_group
    outcomes: Outcomes | None = None  # one row per item, for intervals and paired comparisons
    chance: dict = field(default_factory=dict)  # {metric: {"value", "method"}}: the metric under random answers


@runtime_checkable
class Task(Protocol):
    """The task contract: what `medprobe.run.run` uses of a task, and all it uses. Every registered task
    (a plugin's too) keeps it: medprobe.cli.plugin_kit.conformance checks an instance against it
    (`contract_gaps`). `medprobe.tasks.base.BenchmarkTask` gives the shared parts."""

    FIELDS: ClassVar[tuple[str, ...]]  # the dataset fields it reads (its builder's features hold them)
    METRIC: ClassVar[str]  # its evaluate module: a metric medprobe ships, or "package:path" in a plugin
    GROUP_BY: ClassVar[str]  # what the rows of its per-group table are
    plot_metric: str  # the per-group value `--plot` draws
    timings: dict[str, float]  # seconds of the task's own phases, recorded in the results file
    loaded: list[tuple[str | None, str]]  # the (config, split) pairs `load` read
    subset_of: dict | None  # with a subset option: what was kept of what ({"probed", "total", "unit"})
    outcome_unit: str  # what one item of `Scored.outcomes` is: query, instance, test pair, item
    outcome_fields: dict[str, str]  # each outcome column, described for the outcomes file's readers

    @staticmethod
    def estimators(settings: dict) -> dict[str, Estimator]: ...

    def load(self, dataset: str, config: str | None, split: str) -> Any: ...

    def predict(self, prober: Any, data: Any, seed: int | None) -> Any: ...

    def score(self, data: Any, outputs: Any) -> Scored: ...

    def table(self, record: Any) -> str: ...

    def writers(self, data: Any, outputs: Any) -> list[tuple[str | Path | None, Callable[[Path], None]]]: ...


def contract_gaps(task: object) -> list[str]:
    """The members of the `Task` contract that `task` (an instance) lacks, or has but cannot call."""
    members = [
        *Task.__annotations__,
        *(name for name, value in vars(Task).items() if callable(value) or isinstance(value, staticmethod)),
    ]
    gaps = []
    for name in dict.fromkeys(members):
        if name.startswith("_"):
            continue
        if not hasattr(task, name):
            gaps.append(name)
        elif name not in Task.__annotations__ and not callable(getattr(task, name)):
            gaps.append(f"{name} (not callable)")
    return gaps
