"""What every benchmark task shares (`BenchmarkTask`); each task under medprobe/tasks/ keeps only its differences.

    class MyTask(BenchmarkTask):
        FIELDS = ("id", "query", "answers")   # the dataset fields it reads (the builder's FEATURES must have them)
        METRIC = "acc_at_k"                   # its evaluate module under metrics/
        GROUP_BY = "relation"                 # what the rows of its per-group table are

The shared parts: loading a split the way a Hub user does, checked to hold FIELDS (`read`), the
record of what was loaded (`loaded`) and of a probed subset (`note_subset` -> `subset_of`), the
task's evaluate metric (`metric`), a JSON-lines predictions file written with the results
(`jsonl_writer`), the task's own phase timings, and the per-item outcomes' description
(`outcome_unit`, `outcome_fields`, read by `medprobe.run`). Work split over processes goes through
medprobe.distributed (`split`/`gather`, `train_in_shares`), never a copy of its own here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from medprobe.loading import check_fields, load_probe_dataset

if TYPE_CHECKING:  # imported where used, so that `medprobe --help` stays fast
    import datasets

    from medprobe.records.record import RunRecord
    from medprobe.stats import Estimator
    from medprobe.tasks import Scored

Writers = list[tuple[str | Path | None, Callable[[Path], None]]]


class BenchmarkTask:
    """The task contract of medprobe.tasks (load, predict, score, table, writers, estimators) with the
    parts every benchmark shares; a subclass names its FIELDS, METRIC and GROUP_BY and its five steps."""

    FIELDS: ClassVar[tuple[str, ...]] = ()
    METRIC: ClassVar[str] = ""
    GROUP_BY: ClassVar[str] = ""
    outcome_unit: ClassVar[str] = "item"  # what one row of `Scored.outcomes` is
    # a task trained with several seeds reports `<metric>_std` over them: "population" (n) or "sample" (n - 1),
    # so that a reader recomputes it from the per-seed outcome columns (medprobe.records)
    seed_spread: ClassVar[str] = ""
    outcome_fields: dict[str, str] = {}  # each outcome column, described for the outcomes file's readers  # noqa: RUF012
    # the overall metrics where a lower value is better (every other one: higher), and the range every overall metric
    # lies in: what an export to another schema states of each metric (`medprobe export eee`)
    lower_is_better: ClassVar[frozenset[str]] = frozenset()
    score_range: ClassVar[tuple[float, float]] = (0.0, 1.0)
    plot_metric: str = ""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}  # seconds of the task's own phases, recorded in the results file
        self.loaded: list[tuple[str | None, str]] = []  # the (config, split) pairs `load` read
        self.subset_of: dict | None = None  # with a subset option: {"probed", "total", "unit"}, recorded in the run

    def read(self, dataset: str, config: str | None, split: str, *, name_split: bool = False) -> datasets.Dataset:
        """One split of `dataset`, loaded with `load_dataset` and checked to hold FIELDS; recorded in `loaded`."""
        ds = load_probe_dataset(dataset, config, split)
        where = (f"config {config!r}" if config else "the default config") + (f", split {split!r}" if name_split else "")
        self.check(ds, f"dataset {dataset!r} ({where})")
        if (config, split) not in self.loaded:
            self.loaded.append((config, split))
        return ds

    def check(self, ds: datasets.Dataset, what: str) -> None:
        """Refuse a dataset without the FIELDS the task reads (`what` names it in the message)."""
        check_fields(ds, self.FIELDS, what)

    def note_subset(self, probed: int, total: int, unit: str, note: str) -> None:
        """A subset option kept `probed` of `total` units: recorded (`subset_of`) and said (`note`)."""
        self.subset_of = {"probed": probed, "total": total, "unit": unit}
        print(note)

    @classmethod
    def metric(cls) -> Any:
        """The task's evaluate module (METRIC), loaded from its folder as any Hub user loads it.

        It computes in memory: by default evaluate writes each compute's predictions to an Arrow file in its
        cache (HF_METRICS_CACHE) and reads them back, a transient file that a full disk or `ulimit -f` made a
        traceback of (the scores are the same either way)."""
        from medprobe.resources import import_evaluate, metric_path

        return import_evaluate().load(metric_path(cls.METRIC), keep_in_memory=True)

    @staticmethod
    def jsonl_writer(path: str | Path | None, records: Callable[[], Iterable[dict]]) -> Writers:
        """A file of one JSON object a line (e.g. --predictions), written by `run` with the results JSON."""

        def write(temp: Path) -> None:
            with open(temp, "w", encoding="utf-8") as handle:
                for record in records():
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")

        return [(path, write)]

    def writers(self, data: Any, outputs: Any) -> Writers:
        """The extra files a run writes beside the results JSON (none unless the task has some)."""
        return []

    @staticmethod
    def estimators(settings: dict) -> dict[str, Estimator]:
        raise NotImplementedError

    def load(self, dataset: str, config: str | None, split: str) -> Any:
        raise NotImplementedError

    def predict(self, prober: Any, data: Any, seed: int | None) -> Any:
        raise NotImplementedError

    def score(self, data: Any, outputs: Any) -> Scored:
        raise NotImplementedError

    def table(self, record: RunRecord) -> str:
        raise NotImplementedError
