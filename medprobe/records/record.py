"""The RunRecord: one results JSON per run, holding what is needed to report, compare or repeat it.

The record holds benchmark, dataset, config, split, prober, model, seed, settings, metrics, per-group
metrics, timings and library versions; every overall metric's 95% interval with its n (`intervals`)
and chance level (`chance`); the per-item outcomes file (`outcomes`) and the sha256 of every file
written with it (`files`); the data's content fingerprint, the subset probed, the model's identity,
medprobe's version and commit, the citation keys and the `medprobe probe` command that repeats it.
Readers load it through medprobe.records.verify, which checks it against its outcomes.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from medprobe.atomic import write_text_atomically

LIBRARIES = ("medprobe", "torch", "transformers", "datasets", "evaluate", "huggingface-hub", "accelerate")


def library_versions() -> dict[str, str]:
    from medprobe.building.cards import package_version  # cards imports datasets: only when a record is written

    return {"python": platform.python_version(), **{name: package_version(name) for name in LIBRARIES}}


@dataclass
class RunRecord:
    benchmark: str
    dataset: str
    config: str | None
    split: str
    prober: str
    model: str | None
    seed: int | None
    settings: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)  # overall numbers, e.g. {"acc@1": ..., "macro_acc@1": ...}
    per_group: dict = field(default_factory=dict)  # {group: {metric: value, ...}}
    timings: dict = field(default_factory=dict)  # seconds per phase
    counts: dict = field(default_factory=dict)  # e.g. queries and candidates scored
    intervals: dict = field(default_factory=dict)  # {metric: {"low", "high", "level", "n", "method", ...}} (medprobe.stats)
    chance: dict = field(default_factory=dict)  # {metric: {"value", "method"}}: the metric under random answers
    outcomes: dict | None = None  # {"file", "sha256", "items", "unit", "fields"}: the per-item outcomes beside the JSON
    files: dict = field(default_factory=dict)  # {path relative to the JSON's folder: sha256} of every file written with it
    data_fingerprint: dict = field(default_factory=dict)  # sha256 of the data files probed (medprobe.provenance)
    subset: dict = field(default_factory=dict)  # {"subset": bool, "options", "items", "item_ids_sha256"}
    model_identity: dict = field(default_factory=dict)  # path or Hub id, revision, weights sha256
    source: dict = field(default_factory=dict)  # medprobe's version, and its git commit from a checkout
    command: str = ""  # the `medprobe probe ...` command that repeats the run
    citations: list = field(default_factory=list)  # BibTeX keys of what the run used (`medprobe cite`)
    task: str | None = None  # the registry task that ran (None in files written before it was recorded)
    versions: dict = field(default_factory=library_versions)
    created: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write the JSON atomically: a failed or killed write leaves the previous file as it was."""
        return write_text_atomically(path, self.to_json())
