"""Whether a run probed the data `publish results` says it publishes, for `medprobe publish results`.

    sample_read(record)                       # the shipped sample whose files the run read, or None
    refuse_sample(what, record)               # a run on a shipped sample: refused, whatever --dataset-id says
    card_fingerprint(card, record)            # the run's config/splits' fingerprint as a Hub dataset card states it
    check_dataset(what, record, dataset_id, card)   # a real publish: the run's data is the Hub dataset's

A shipped sample (a profile plan's `sample` whose scores are not the benchmark's, e.g. medprobe.sample("medlama"))
is recognised by content, not by path: a run read it when a data file its record fingerprints
(`data_fingerprint["files"]`, the sha256 of each file read) has the sha256 of a file of the sample, so a copy of
the folder, moved or with its files renamed, is recognised too.

A Hub dataset's card, as `medprobe publish dataset` uploads a built folder, states each data file's sha256 in its
`medprobe_build:` record (medprobe/building/cards.py). The fingerprint of the config/splits a run read is derived
from those the way medprobe.provenance.dataset_fingerprint derives it from the files, so the two are equal exactly
when the run read the files the Hub dataset holds. A run that read the data from the Hub records the repo and
revision instead, and is checked by them. `--dataset-mismatch-ok` skips the check (the sample refusal stays).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from medprobe.hub.checks import PublishError
from medprobe.records.record import RunRecord

DATASET_MISMATCH_OK = "--dataset-mismatch-ok"


@dataclass(frozen=True)
class Sample:
    """A data folder shipped with medprobe whose scores are not its benchmark's."""

    benchmark: str
    folder: Path
    files: dict[str, str]  # sha256 -> the file's path in the folder


@functools.lru_cache(maxsize=1)
def shipped_samples() -> tuple[Sample, ...]:
    """Every shipped sample, its data files hashed once per process (a few hundred kB)."""
    from medprobe.digests import sha256_file
    from medprobe.profiling.plan import profiled, sample_folder

    samples: list[Sample] = []
    for entry in profiled():
        plan = entry.profile
        folder = sample_folder(plan) if plan.without_data == "sample" and not plan.sample_is_benchmark else None
        if folder is None or not folder.is_dir() or any(sample.folder == folder for sample in samples):
            continue
        data = [path for path in sorted(folder.rglob("*")) if path.is_file() and path.name != "README.md"]
        samples.append(Sample(entry.benchmark, folder, {sha256_file(path): path.relative_to(folder).as_posix() for path in data}))
    return tuple(samples)


def sample_read(record: RunRecord) -> tuple[Sample, str, str] | None:
    """(the sample, the run's data file, the sample's file of the same bytes) when the run read a shipped sample."""
    files = (record.data_fingerprint or {}).get("files") or {}
    for sample in shipped_samples():
        for name, digest in files.items():
            if digest in sample.files:
                return sample, name, sample.files[digest]
    return None


def sample_words(sample: Sample) -> str:
    return f"the sample of {sample.benchmark} shipped with medprobe (medprobe.sample({sample.benchmark!r}))"


def refuse_sample(what: str, record: RunRecord) -> None:
    """Stop when the run read a shipped sample: its numbers are not the benchmark's, whatever --dataset-id names."""
    found = sample_read(record)
    if found is None:
        return
    sample, name, file = found
    raise PublishError(
        f"{what} probed {sample_words(sample)}, not the benchmark: its data file {name} has the bytes of the sample's "
        f"{file}; whatever --dataset-id names, its numbers are not {sample.benchmark}'s. Publish a run on the built "
        f"benchmark (`medprobe build {sample.benchmark} ...`)"
    )


# --- the Hub dataset's card ------------------------------------------------------------------------------


def probed_pairs(record: RunRecord) -> list[tuple[str, str]]:
    """The (config, split) pairs whose files the run's fingerprint names (`<config>/<split>/<file>`)."""
    names = (record.data_fingerprint or {}).get("files") or {}
    return list(dict.fromkeys(tuple(name.split("/")[:2]) for name in names if name.count("/") >= 2))


def card_build_record(card: str) -> dict:
    """The `medprobe_build:` record of a dataset card's YAML ({} when it has none or does not parse)."""
    from medprobe.building.cards import RECORD_KEY

    if not card.startswith("---"):
        return {}
    header = card[3:].split("\n---", 1)[0]
    try:
        meta = yaml.safe_load(header) or {}
    except yaml.YAMLError:
        return {}
    record = meta.get(RECORD_KEY) if isinstance(meta, dict) else None
    return record if isinstance(record, dict) else {}


def card_files(card: str, pairs: list[tuple[str, str]]) -> dict[str, str] | None:
    """{`<config>/<split>/<file>`: sha256} of the pairs' data files as the card's build record lists them, named as
    medprobe.provenance.dataset_fingerprint names them; None when the record does not cover every pair."""
    from medprobe.building.build import split_of

    configs = card_build_record(card).get("configs") or {}
    files = {}
    for config, split in pairs:
        listed = (configs.get(config) or {}).get("files") or {}
        found = {path: digest for path, digest in listed.items() if split_of(path) == split}
        if not found:
            return None
        files.update({f"{config}/{split}/{PurePosixPath(path).name}": digest for path, digest in found.items()})
    return files


def card_fingerprint(card: str, record: RunRecord) -> str | None:
    """The sha256 the card states for the config/splits the run read, or None when it states none for them."""
    from medprobe.provenance import files_digest

    pairs = probed_pairs(record)
    files = card_files(card, pairs) if pairs else None
    return files_digest(files) if files else None


def check_dataset(what: str, record: RunRecord, dataset_id: str, card: str | None) -> str:
    """Compare the run's data with the Hub dataset `dataset_id` (`card`: its README.md, None when it has none);
    returns what was checked, or stops with both fingerprints and what to do."""
    fingerprint = record.data_fingerprint or {}
    hub = fingerprint.get("hub")
    if hub:  # read from the Hub: the files are the repo's at the recorded revision
        if hub.lower() != dataset_id.lower():
            raise PublishError(
                f"{what} read its data from the Hub dataset {hub}, not --dataset-id {dataset_id}: publish with "
                f"--dataset-id {hub}, or pass {DATASET_MISMATCH_OK} if {dataset_id} holds the same data"
            )
        return f"dataset checked: the run read {hub} at revision {str(fingerprint.get('revision', ''))[:12]}"
    ours, pairs = fingerprint.get("sha256"), ", ".join("/".join(pair) for pair in probed_pairs(record)) or "?"
    if not ours:
        raise PublishError(
            f"{what} records no data fingerprint (a results file of a medprobe before 0.2), so nothing shows it probed "
            f"{dataset_id}: run the probe again, or pass {DATASET_MISMATCH_OK}"
        )
    stated = card_fingerprint(card or "", record)
    if stated is None:
        raise PublishError(
            f"cannot check that {what} probed --dataset-id {dataset_id}: its card states no sha256 of the data files of "
            f"{pairs} (no `medprobe_build:` record for them); publish the built folder the run read with `medprobe publish "
            f"dataset FOLDER --repo {dataset_id}`, or pass {DATASET_MISMATCH_OK}"
        )
    if stated != ours:
        raise PublishError(
            f"{what} probed other data than --dataset-id {dataset_id} holds: data fingerprint {ours[:12]} ({pairs}) in "
            f"the run, {stated[:12]} from the dataset card's medprobe_build record; publish the folder the run read with "
            f"`medprobe publish dataset FOLDER --repo {dataset_id}`, probe the data {dataset_id} holds, or pass "
            f"{DATASET_MISMATCH_OK}"
        )
    return f"dataset checked: {pairs} of {dataset_id} has the data fingerprint {ours[:12]} the run recorded"


# --- in a publish ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbedData:
    """A run's data to check against the Hub dataset it is published under."""

    what: str  # the results file, or a run of a profile
    record: RunRecord
    dataset_id: str


def check_offline(items: list[ProbedData], mismatch_ok: bool) -> None:
    """The refusal that needs no network: a run that read its data from another Hub dataset than --dataset-id."""
    for item in [] if mismatch_ok else items:
        hub = (item.record.data_fingerprint or {}).get("hub")
        if hub and hub.lower() != item.dataset_id.lower():
            check_dataset(item.what, item.record, item.dataset_id, None)  # says it, with the flag


def plan_lines(items: list[ProbedData], mismatch_ok: bool) -> list[str]:
    """What the plan says about the data check: what a dry run could not check, and what a real publish compares."""
    if mismatch_ok:
        return [f"  dataset: not checked ({DATASET_MISMATCH_OK}): the numbers are published under the --dataset-id given"]
    lines = []
    for item in items:
        fingerprint = item.record.data_fingerprint or {}
        pairs = ", ".join("/".join(pair) for pair in probed_pairs(item.record)) or "no data files recorded"
        if fingerprint.get("hub"):
            lines.append(f"  dataset: {item.what}: read from the Hub dataset {fingerprint['hub']}, which is --dataset-id")
            continue
        lines += [
            f"  dataset: {item.what}: data fingerprint {str(fingerprint.get('sha256'))[:12]} ({pairs})",
            f"           dataset fingerprint: not checked offline; a real publish reads the card of {item.dataset_id} and "
            "compares the sha256 its medprobe_build record states for those files; otherwise it stops",
        ]
    return lines


def dataset_ids_to_read(items: list[ProbedData], mismatch_ok: bool) -> list[str]:
    """The Hub datasets whose card a real publish reads (a run read from the Hub is checked by its repo and revision)."""
    if mismatch_ok:
        return []
    return list(dict.fromkeys(item.dataset_id for item in items if not (item.record.data_fingerprint or {}).get("hub")))


def check_hub(items: list[ProbedData], cards: dict[str, str | None]) -> str:
    """Each run's data against its dataset's card (`cards`: dataset id -> README.md text, None without one)."""
    return "\n".join(check_dataset(item.what, item.record, item.dataset_id, cards.get(item.dataset_id)) for item in items)
