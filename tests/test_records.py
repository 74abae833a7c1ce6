"""Every reader of a run goes through medprobe.records, which refuses a record that disagrees with itself.

Measured before (issue 31): a results JSON with `metrics["acc@10"]` set to 0.9 was compared ("90.00 [33.02, 51.89]",
a value outside its own interval) and planned for publishing; another run's outcomes file with its sha256 fixed in
the JSON compared as "difference +0.00, p 1.000"; a binary or UTF-16 file given to compare ended in a traceback.
Each case here now ends in one line naming the file (and the metric, with both values), exit 2.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from medprobe.cli import main
from medprobe.records import RecordError, load_run
from medprobe.records.outcomes import outcomes_path
from synthetic_runs import write_medlama_run, write_mst_run
from test_probe_outputs import run_lookup


@pytest.fixture
def run_files(synthetic_medlama_hub, tmp_path, monkeypatch) -> Path:
    """A real run of the medlama task (a stand-in prober on the synthetic release): its results JSON."""
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    run_lookup(monkeypatch, synthetic_medlama_hub, out_dir, per_relation=3)
    monkeypatch.undo()
    return out_dir / "results.json"


def edited(path: Path, change) -> Path:
    """`path` with its JSON object changed by `change(data)`, written back."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("medprobe: error: ") and "Traceback" not in err, err
    return err


def test_a_run_as_written_reads_back_with_its_item_contents(run_files):
    loaded = load_run(run_files)
    assert len(loaded.outcomes) == loaded.record.subset["items"] and len(loaded.outcomes.contents) == len(loaded.outcomes)
    assert set(loaded.record.files) == {"results.outcomes.jsonl", "predictions.jsonl"}


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda d: d["metrics"].__setitem__("acc@10", 0.9), "acc@10 is 0.9 in the file but"),
        (lambda d: d["intervals"]["acc@1"].__setitem__("high", 0.99), "the 95% interval's high of acc@1 is 0.99 in the file"),
        (lambda d: d["intervals"]["acc@10"].__setitem__("n", 5), "the 95% interval's n of acc@10 is 5 in the file but"),
        (lambda d: next(iter(d["per_group"].values())).__setitem__("acc@10", 0.77), "acc@10 of '"),
        (lambda d: d["subset"].__setitem__("items", 1), "subset.items is 1 in the file but"),
    ],
    ids=["metric", "interval bound", "interval n", "per-group value", "item count"],
)
def test_an_edited_number_is_refused_naming_the_metric_and_both_values(run_files, capsys, change, named):
    edited(run_files, change)
    with pytest.raises(RecordError, match="the record was edited or mixed with another run's files"):
        load_run(run_files)
    assert main(["compare", str(run_files), str(run_files)]) == 2
    assert named in one_line_error(capsys)


def test_another_runs_outcomes_with_their_sha256_fixed_are_refused(tmp_path, capsys):
    """Measured before: compare printed 42.45 against 4.72 with "difference +0.00, p 1.000"."""
    good = write_medlama_run(tmp_path / "good.json", 0.6, seed=1)
    other = write_medlama_run(tmp_path / "other.json", 0.1, seed=2)
    shutil.copy(outcomes_path(other), outcomes_path(good))
    digest = hashlib.sha256(outcomes_path(good).read_bytes()).hexdigest()
    edited(good, lambda d: d["outcomes"].__setitem__("sha256", digest))
    assert main(["compare", str(good), str(other)]) == 2
    assert "good.json: acc@1 is" in one_line_error(capsys)


def test_an_edited_seed_spread_is_refused(tmp_path):
    run = write_mst_run(tmp_path / "mst.json", seeds=3, accuracy=0.7, rng_seed=0)
    edited(run, lambda d: d["metrics"].__setitem__("accuracy_std", 0.0))  # the task records the population std
    with pytest.raises(RecordError, match="accuracy_std is 0.0 in the file but"):
        load_run(run)


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "data, said",
    [
        (bytes(range(256)) * 4, "it is UTF-16 text or binary"),
        ('{"benchmark": "medlama"}'.encode("utf-16"), "it is UTF-16 text or binary"),
        (b'{"benchmark": "medlama", "metrics": {', "not JSON (line 1, column"),
        (b"[1, 2, 3]", "its JSON is a list, not an object"),
        (b'{"benchmark": "medlama", "nonsense": 1}', "unknown field(s) nonsense"),
        ("caf\xe9".encode("latin-1"), "not UTF-8 text (byte 3 is 0xe9"),
    ],
    ids=["binary", "utf-16", "truncated", "list", "unknown field", "latin-1"],
)
def test_a_file_that_is_not_a_results_json_is_one_line(tmp_path, capsys, data, said):
    junk = write_bytes(tmp_path / "junk.json", data)
    other = write_medlama_run(tmp_path / "other.json", 0.1, seed=2)
    assert main(["compare", str(junk), str(other)]) == 2
    assert said in one_line_error(capsys)


@pytest.mark.parametrize(
    "line, said",
    [('"rank": "3"', "rank is '3'; expected a number or null"), ('"rank": true', "rank is True; expected a number or null")],
    ids=["string", "bool"],
)
def test_an_outcome_that_is_not_a_number_is_never_read_as_one(tmp_path, line, said):
    run = write_medlama_run(tmp_path / "run.json", 0.5, seed=1)
    path = outcomes_path(run)
    lines = path.read_text().splitlines()
    lines[4] = lines[4].replace(f'"rank": {json.loads(lines[4])["rank"]}'.replace("None", "null"), line)
    path.write_text("\n".join(lines) + "\n")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    edited(run, lambda d: d["outcomes"].__setitem__("sha256", digest))
    with pytest.raises(RecordError, match=f"line 5: {said}".replace("?", r"\?")):
        load_run(run)


def test_the_python_api_load_checks_the_record_too(run_files):
    import medprobe

    assert medprobe.load(run_files).metrics == load_run(run_files).record.metrics
    edited(run_files, lambda d: d["metrics"].__setitem__("acc@1", 0.5))
    with pytest.raises(RecordError):
        medprobe.load(run_files)
