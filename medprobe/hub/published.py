"""Runs in a results repo (`medprobe publish results --results-repo`): their files, and reading them back.

    RUN = <model>/<benchmark>/<config>/<prober>            # a run's folder in the repo (`config` "all": every config)
    RUN/results.json                                        # the results JSON, as the probe wrote it
    RUN/outcomes.parquet                                    # its outcomes: id, item, group, the outcome columns, prober

    folder = fetch_run("hub:me/results/minilm/medlama/hard/contrastive")   # into the Hub cache; offline once there
    run = load_published(folder)                                          # medprobe.records.LoadedRun, checked

The outcomes are stored as Parquet so that `load_dataset(repo, "<benchmark>_<config>")` reads them, and
nothing else: the JSON-lines file the record names (and hashes) is rebuilt from the Parquet rows, byte
for byte, and read with `medprobe.records.load_run`, which checks it against the record's sha256 and
recomputes every number from it. A Parquet file that does not give back the recorded file is refused
like any edited outcomes file. `prober` is a column so that one model's split of a config can hold the
runs of several probers.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from medprobe.contracts import UserError

if TYPE_CHECKING:
    from medprobe.records import LoadedRun
    from medprobe.records.record import RunRecord
    from medprobe.stats import Outcomes

RESULTS = "results.json"
OUTCOMES = "outcomes.parquet"
MANIFEST = "medprobe_runs.json"  # the repo's index of its runs (medprobe.hub.results_repo)
HUB = "hub:"
META_COLUMNS = ("id", "item", "group", "prober")
NAME = re.compile(r"[^\w]+")


def name_part(text: str) -> str:
    """A path part and split name the Hub accepts (`^\\w+$`): every run of other characters becomes one `_`."""
    return NAME.sub("_", text).strip("_") or "unnamed"


def run_folder(model_name: str, record: RunRecord, config: str | None = None) -> str:
    """`<model>/<benchmark>/<config>/<prober>`: where a run lies in a results repo (config "all" for a config-less run)."""
    parts = (model_name, record.benchmark, config or record.config or "all", record.prober)
    return "/".join(name_part(part) for part in parts)


# --- the Parquet file ----------------------------------------------------------------------------------


def outcomes_parquet(outcomes: Outcomes, prober: str) -> bytes:
    """The outcomes as one Parquet file: id, item (when recorded), group, each outcome column (null: no value; a list
    per item for columns with several values, e.g. seeds), and the prober."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    clash = [name for name in outcomes.columns if name in META_COLUMNS]
    if clash:
        raise UserError(f"an outcome column is named {clash[0]!r}, which the results repo's Parquet uses itself")
    columns: dict[str, pa.Array] = {"id": pa.array(outcomes.ids, pa.string())}
    if outcomes.contents:
        columns["item"] = pa.array(outcomes.contents, pa.string())
    columns["group"] = pa.array(outcomes.groups, pa.string())
    for name, array in outcomes.columns.items():
        if array.ndim == 1:
            columns[name] = pa.array(array, pa.float64(), mask=np.isnan(array))
        else:
            values = [[None if np.isnan(v) else float(v) for v in row] for row in array]
            columns[name] = pa.array(values, pa.list_(pa.float64()))
    columns["prober"] = pa.array([prober] * len(outcomes), pa.string())
    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


def outcomes_from_parquet(data: bytes, where: str) -> tuple[Outcomes, str]:
    """(the outcomes, the prober) of a results repo's Parquet file; one line naming `where` when it is not one."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from medprobe.stats import Outcomes

    try:
        table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError) as err:
        raise UserError(f"{where} is not a Parquet file of outcomes ({err})") from None
    names = table.column_names
    if not {"id", "group", "prober"} <= set(names):
        raise UserError(f"{where} is not a results repo's outcomes file (no id, group or prober column)")
    probers = set(table.column("prober").to_pylist())
    if len(probers) != 1:
        raise UserError(f"{where} holds the outcomes of {len(probers)} probers; a run's file holds one")
    columns = {}
    for name in names:
        if name in META_COLUMNS:
            continue
        values = table.column(name).to_pylist()
        nested = isinstance(next((v for v in values if v is not None), None), list)
        columns[name] = (
            [[np.nan if v is None else v for v in row] for row in values]
            if nested
            else [np.nan if v is None else v for v in values]
        )
    try:
        outcomes = Outcomes.build(
            table.column("id").to_pylist(),
            table.column("group").to_pylist(),
            columns,
            table.column("item").to_pylist() if "item" in names else None,
        )
    except (ValueError, TypeError) as err:
        raise UserError(f"{where}: {err}") from None
    return outcomes, probers.pop()


# --- reading a run back --------------------------------------------------------------------------------


def is_run_folder(folder: Path) -> bool:
    return (folder / RESULTS).is_file() and (folder / OUTCOMES).is_file()


def load_published(folder: str | Path) -> LoadedRun:
    """A run of a results repo (a local copy's folder, or one fetched into the Hub cache), checked by
    `medprobe.records.load_run`: its outcomes file rebuilt from the Parquet rows must be the one the record hashes."""
    from medprobe.records import RecordError, load_run
    from medprobe.records.outcomes import outcomes_jsonl
    from medprobe.records.verify import load_record_file

    folder = Path(folder)
    results = folder / RESULTS
    if not is_run_folder(folder):
        raise UserError(f"{folder} is not a run of a results repo (no {RESULTS} and {OUTCOMES} in it)")
    record = load_record_file(results)
    name = (record.outcomes or {}).get("file")
    if not isinstance(name, str) or PurePosixPath(name).name != name or name in ("", ".", ".."):
        raise RecordError(f"{results} names no outcomes file beside it; it is not a published run")
    outcomes, prober = outcomes_from_parquet((folder / OUTCOMES).read_bytes(), str(folder / OUTCOMES))
    if prober != record.prober:
        raise RecordError(f"{folder / OUTCOMES} holds outcomes of prober {prober}, the record is of {record.prober}")
    with tempfile.TemporaryDirectory(prefix="medprobe-published-") as tmp:
        shutil.copyfile(results, Path(tmp) / RESULTS)
        (Path(tmp) / name).write_text(outcomes_jsonl(outcomes), encoding="utf-8")
        try:
            loaded = load_run(Path(tmp) / RESULTS)
        except RecordError as err:  # say which folder, not the throwaway one
            raise RecordError(str(err).replace(str(Path(tmp) / name), str(folder / OUTCOMES)).replace(tmp, str(folder))) from None
    return replace(loaded, path=results)


# --- from the Hub ----------------------------------------------------------------------------------------


def parse_hub(spec: str) -> tuple[str, str]:
    """(repo id, path in it) of `hub:ORG/NAME[/<model>/<benchmark>/<config>/<prober>]`."""
    parts = spec[len(HUB) :].strip("/").split("/")
    if len(parts) not in (2, 6) or not all(parts):
        raise UserError(
            f"{spec}: expected hub:ORG/NAME/<model>/<benchmark>/<config>/<prober> (a run) or hub:ORG/NAME (a results repo)"
        )
    return "/".join(parts[:2]), "/".join(parts[2:])


def hub_failure(spec: str, err: Exception, offline: str = "") -> UserError:
    """One line naming the run and what to do; `offline` is why only the local cache was asked (hub_offline_reason)."""
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError, RepositoryNotFoundError

    if isinstance(err, LocalEntryNotFoundError):
        close = close_cached_spec(spec)
        return UserError(
            f"{spec}: not in the local Hub cache, and the Hub cannot be reached ({offline or 'HF_HUB_OFFLINE set, or no network'}); "
            + (f"did you mean {close}? It is in the cache. Otherwise " if close else "check the name, or ")
            + "fetch it once where the Hub is reachable, or give a local copy of the run instead"
        )
    if isinstance(err, RepositoryNotFoundError):
        return UserError(f"{spec}: no such dataset repo on the Hub (or the token cannot see it); check ORG/NAME")
    if isinstance(err, EntryNotFoundError):
        return UserError(f"{spec}: the results repo holds no such run; its runs are listed in its {MANIFEST}")
    return UserError(
        f"{spec}: cannot be fetched from the Hub ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
    )


def close_cached_spec(spec: str) -> str | None:
    """A run (or results repo) in the local Hub cache whose `hub:` name is close to `spec`: the typo it may be."""
    import difflib

    from huggingface_hub import constants

    repo_id, inside = parse_hub(spec)
    known: set[str] = set()
    for repo in Path(constants.HF_HUB_CACHE).glob("datasets--*--*"):
        cached = repo.name[len("datasets--") :].replace("--", "/", 1)
        if not inside:
            known.add(f"{HUB}{cached}")
            continue
        for results in repo.glob(f"snapshots/*/*/*/*/*/{RESULTS}"):
            known.add(f"{HUB}{cached}/{'/'.join(results.parent.parts[-4:])}")
    found = difflib.get_close_matches(spec, sorted(known), n=1, cutoff=0.8)
    return found[0] if found else None


def fetch_run(spec: str) -> Path:
    """The folder of a published run in the Hub cache (downloaded once; read from the cache offline), both files of
    one commit of the repo. When the Hub cannot be reached (HF_HUB_OFFLINE, or a probe of its host that fails within
    2 s), only the cache is read: huggingface_hub would otherwise retry for ~24 s before saying so."""
    from huggingface_hub import hf_hub_download

    from medprobe.local_paths import hub_offline_reason

    repo_id, path = parse_hub(spec)
    if not path:
        raise UserError(f"{spec} names a whole results repo; give one run: {spec}/<model>/<benchmark>/<config>/<prober>")
    offline = hub_offline_reason()
    try:
        results = Path(hf_hub_download(repo_id, f"{path}/{RESULTS}", repo_type="dataset", local_files_only=bool(offline)))
        revision = commit_of(results)
        outcomes = Path(
            hf_hub_download(repo_id, f"{path}/{OUTCOMES}", repo_type="dataset", revision=revision, local_files_only=bool(offline))
        )
    except Exception as err:  # noqa: BLE001 - whatever the Hub client raises, one line naming the run
        raise hub_failure(spec, err, offline) from None
    if outcomes.parent != results.parent:  # pragma: no cover - one snapshot folder per commit in the Hub cache
        raise UserError(f"{spec}: its files came from two commits of the repo; fetch again")
    return results.parent


def commit_of(path: Path) -> str | None:
    """The commit of a file in the Hub cache (`.../snapshots/<commit>/...`)."""
    parts = path.parts
    return parts[parts.index("snapshots") + 1] if "snapshots" in parts else None


def fetch_repo(spec: str) -> Path:
    """A local copy of a whole results repo in the Hub cache (its runs' records and outcomes, not predictions)."""
    from huggingface_hub import snapshot_download

    from medprobe.local_paths import hub_offline_reason

    repo_id, path = parse_hub(spec)
    if path:
        raise UserError(f"{spec} is one run; a leaderboard source is a whole results repo: hub:{repo_id}")
    offline = hub_offline_reason()  # unreachable: the cache only, at once (as fetch_run)
    try:
        folder = snapshot_download(
            repo_id,
            repo_type="dataset",
            allow_patterns=[f"*/{RESULTS}", f"*/{OUTCOMES}", MANIFEST],
            local_files_only=bool(offline),
        )
    except Exception as err:  # noqa: BLE001
        raise hub_failure(spec, err, offline) from None
    return Path(folder)


def published_runs(root: Path) -> list[Path]:
    """The run folders of a results repo's local copy, in path order."""
    return sorted(path.parent for path in root.glob(f"*/*/*/*/{RESULTS}") if is_run_folder(path.parent))


def manifest(root: Path) -> dict:
    """The repo's index of its runs (path -> what it is), {} when there is none or it does not parse."""
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
