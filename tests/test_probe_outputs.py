"""`medprobe probe` never loses a run: outputs are checked before anything loads, and written
atomically (a failed, interrupted or killed write leaves the previous files byte for byte).

These tests run as root on CI, where file permissions do not stop writes: an unwritable target
is made real with a path under a regular file, an existing folder, or /sys (read-only even for
root); a refused write is otherwise simulated by patching, and says so in its name.
"""

import builtins
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import medprobe.run
from medprobe.atomic import UnwritableOutput, atomic_output, check_writable, write_all_atomically
from medprobe.cli import main
from medprobe.contracts import Prober
from medprobe.run import RunRequest, run

REPO_ROOT = Path(__file__).resolve().parents[1]
# every task, each with a prober of its kinds
RUNS = [
    ("contrastive", "medlama"),
    ("mask-average", "medlama"),
    ("causal-lm", "context_variance"),
    ("pair-classifier", "disknE"),
    ("mlm-head", "mst"),
]


class LookupProber(Prober):
    """Ranks the candidates in their order (plumbing only)."""

    name = "lookup"
    kinds = ("ranking",)

    def rank(self, queries, candidates, k):
        return [list(candidates[:k]) for _ in queries]


@pytest.fixture
def nothing_loads(monkeypatch):
    """Any dataset or model load fails the test: the checks must come first."""
    import datasets

    from medprobe import models

    def refuse(*args, **kwargs):
        raise AssertionError("a dataset or model was loaded before the outputs were checked")

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    monkeypatch.setattr(datasets, "get_dataset_config_names", refuse)
    monkeypatch.setattr(models, "resolve_model", refuse)


def probe(tmp_path, prober, *extra):
    return main(["probe", "--dataset", str(tmp_path / "any-dataset"), "--prober", prober, "--model", "minilm", *map(str, extra)])


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("medprobe: error: "), err
    return err


# --- checked before anything loads ------------------------------------------------------------------


@pytest.mark.parametrize("prober, task", RUNS)
def test_out_that_is_a_folder_fails_before_the_dataset_or_model_loads(tmp_path, prober, task, nothing_loads, capsys):
    assert probe(tmp_path, prober, "--task", task, "--out", tmp_path) == 2
    assert f"--out {tmp_path} is a folder" in one_error_line(capsys)


@pytest.mark.parametrize("option", ["--out", "--predictions", "--plot"])
def test_output_under_a_regular_file_fails_before_anything_loads(tmp_path, option, nothing_loads, capsys):
    (tmp_path / "file").write_text("not a folder")
    target = tmp_path / "file" / "sub" / "x.png"
    assert probe(tmp_path, "contrastive", option, target) == 2
    err = one_error_line(capsys)
    assert f"{option} {target}: cannot create its folder, {tmp_path / 'file'} is a file" in err


def test_read_only_target_fails_before_anything_loads_sysfs(tmp_path, nothing_loads, capsys):
    """/sys refuses new files even to root: a real read-only place on Linux."""
    if not Path("/sys").is_dir():
        pytest.skip("no /sys here")
    try:
        Path("/sys/medprobe-write-test").touch()
    except OSError:
        pass
    else:
        Path("/sys/medprobe-write-test").unlink()
        pytest.skip("/sys is writable here")
    assert probe(tmp_path, "contrastive", "--out", "/sys/results.json") == 2
    assert "--out /sys/results.json: cannot write in /sys (Permission denied)" in one_error_line(capsys)


def test_refused_write_fails_before_anything_loads_simulated(tmp_path, nothing_loads, capsys, monkeypatch):
    """A folder where creating a file fails (a read-only mount, an ACL), simulated: root ignores chmod."""
    import tempfile

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    assert probe(tmp_path, "causal-lm", "--task", "context_variance", "--out", tmp_path / "new" / "r.json") == 2
    assert f"--out {tmp_path / 'new' / 'r.json'}: cannot write in {tmp_path} (Permission denied)" in one_error_line(capsys)


def test_plot_without_matplotlib_fails_before_anything_loads(tmp_path, nothing_loads, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    assert probe(tmp_path, "mlm-head", "--out", tmp_path / "r.json", "--plot", tmp_path / "bars.png") == 2
    assert "--plot needs matplotlib" in one_error_line(capsys)


def test_plot_in_a_format_matplotlib_cannot_write_fails_before_anything_loads(tmp_path, nothing_loads, capsys):
    assert probe(tmp_path, "pair-classifier", "--out", tmp_path / "r.json", "--plot", tmp_path / "bars.txt") == 2
    assert "matplotlib cannot write .txt images" in one_error_line(capsys)


def test_two_options_naming_one_file_fail_before_anything_loads(tmp_path, nothing_loads, capsys):
    same = tmp_path / "run.json"
    assert probe(tmp_path, "contrastive", "--out", same, "--predictions", same) == 2
    assert "--out and --predictions name the same file" in one_error_line(capsys)


@pytest.mark.parametrize("prober", ["pair-classifier", "mlm-head"])
def test_predictions_for_a_prober_that_writes_none_is_an_error_not_ignored(tmp_path, prober, nothing_loads, capsys):
    # --predictions is an option of the tasks that write predictions; the parser refuses it for the others
    with pytest.raises(SystemExit) as exit_:
        probe(tmp_path, prober, "--out", tmp_path / "r.json", "--predictions", tmp_path / "p.jsonl")
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--predictions is an option of --task medlama" in err and f"not of --prober {prober}" in err


def test_check_writable_creates_nothing_that_stays(tmp_path):
    target = tmp_path / "new" / "deeper" / "results.json"
    assert check_writable(target, "--out") == target
    assert list(tmp_path.iterdir()) == []  # neither the folders nor the probe file were left behind


# --- written atomically ------------------------------------------------------------------------------


def test_atomic_output_replaces_the_target_only_when_the_writer_finishes(tmp_path):
    target = tmp_path / "results.json"
    target.write_text("old")
    with atomic_output(target) as temp:
        temp.write_text("new")
        assert target.read_text() == "old" and temp.parent == tmp_path and temp.name.startswith(".")
    assert target.read_text() == "new" and os.listdir(tmp_path) == ["results.json"]


@pytest.mark.parametrize(
    "interruption", [KeyboardInterrupt(), OSError(28, "No space left on device")], ids=["ctrl_c", "disk_full"]
)
def test_interrupted_writer_leaves_the_old_file_and_no_temporary(tmp_path, interruption):
    target = tmp_path / "results.json"
    target.write_bytes(b'{"old": true}\n')
    with pytest.raises(type(interruption)):
        with atomic_output(target) as temp:
            temp.write_text("half of the new")
            raise interruption
    assert target.read_bytes() == b'{"old": true}\n' and os.listdir(tmp_path) == ["results.json"]


def test_writers_of_one_run_change_all_files_or_none(tmp_path):
    first, second = tmp_path / "results.json", tmp_path / "predictions.jsonl"
    first.write_text("old results")
    second.write_text("old predictions")

    def broken(path):
        path.write_text("partial")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_all_atomically([(first, lambda path: path.write_text("new results")), (second, broken)])
    assert first.read_text() == "old results" and second.read_text() == "old predictions"
    assert sorted(os.listdir(tmp_path)) == ["predictions.jsonl", "results.json"]


def test_atomic_output_refuses_a_folder_target(tmp_path):
    with pytest.raises(UnwritableOutput, match="is a folder"):
        with atomic_output(tmp_path):
            pass


@pytest.fixture
def writes_fail_after(monkeypatch):
    """Make writes to files under a folder (whose names hold `name_part`) fail after `limit` characters,
    as a full disk (or Ctrl-C) would, whatever the code that writes them."""

    def install(folder: Path, limit: int, error: BaseException, name_part: str = ""):
        real_open = io.open

        def fake_open(file, mode="r", *args, **kwargs):
            handle = real_open(file, mode, *args, **kwargs)
            if isinstance(
                file, int
            ):  # a descriptor (subprocess's pipes, e.g. the git commit in the results): not a file under folder
                return handle
            path = Path(file).resolve()
            if "w" not in mode or not str(path).startswith(str(folder.resolve())) or name_part not in path.name:
                return handle
            written = 0
            real_write = handle.write

            def write(data):
                nonlocal written
                if written + len(data) > limit:
                    real_write(data[: max(0, limit - written)])
                    handle.flush()
                    raise error
                written += len(data)
                return real_write(data)

            handle.write = write
            return handle

        monkeypatch.setattr(io, "open", fake_open)
        monkeypatch.setattr(builtins, "open", fake_open)

    return install


def run_lookup(monkeypatch, hub, out_dir, plot=None, **task_options):
    """The medlama task through `run`, with LookupProber standing in for the contrastive prober."""
    monkeypatch.setattr(medprobe.run, "make_prober", lambda *args, **kwargs: LookupProber())
    task_options.setdefault("predictions", str(out_dir / "predictions.jsonl"))
    request = RunRequest(
        task="medlama",
        prober="contrastive",
        dataset=str(hub),
        config="full",
        model="none",
        task_options=task_options,
        out=str(out_dir / "results.json"),
        plot=plot,
    )
    return run(request)


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()], ids=["disk_full", "ctrl_c"])
def test_failed_write_of_a_run_leaves_its_previous_outputs_byte_identical(
    synthetic_medlama_hub, tmp_path, writes_fail_after, error, monkeypatch
):
    out_dir = tmp_path / "outputs"
    out_dir.mkdir()
    old = {"results.json": b'{"metrics": {"acc@1": 0.42}}\n', "predictions.jsonl": b'{"id": "x", "predictions": ["a"]}\n'}
    for name, content in old.items():
        (out_dir / name).write_bytes(content)
    writes_fail_after(out_dir, 300, error)  # both files are longer: the results JSON fails first
    with pytest.raises(type(error)):
        run_lookup(monkeypatch, synthetic_medlama_hub, out_dir)
    assert {p.name: p.read_bytes() for p in out_dir.iterdir()} == old


def test_failed_predictions_write_keeps_the_previous_results_too(synthetic_medlama_hub, tmp_path, writes_fail_after, monkeypatch):
    """The results JSON is written in full, then the predictions fail: neither file changes."""
    out_dir = tmp_path / "outputs"
    out_dir.mkdir()
    (out_dir / "results.json").write_text("old results\n")
    (out_dir / "predictions.jsonl").write_text("old predictions\n")
    writes_fail_after(out_dir, 500, OSError(28, "No space left on device"), name_part="predictions")
    with pytest.raises(OSError):
        run_lookup(monkeypatch, synthetic_medlama_hub, out_dir, per_relation=1)
    assert (out_dir / "results.json").read_text() == "old results\n"
    assert (out_dir / "predictions.jsonl").read_text() == "old predictions\n"


def test_killed_run_leaves_the_previous_results_byte_identical(tmp_path):
    """SIGKILL in the middle of writing the results JSON (no Python cleanup runs)."""
    target = tmp_path / "results.json"
    target.write_bytes(b'{"metrics": {"acc@1": 0.42}}\n')
    script = textwrap.dedent(f"""
        import io, builtins, sys, time
        from medprobe.records.record import RunRecord
        real_open = io.open
        def slow_open(file, mode="r", *args, **kwargs):
            handle = real_open(file, mode, *args, **kwargs)
            if "w" in mode:
                real_write = handle.write
                def write(data):
                    real_write(data[: len(data) // 2]); handle.flush()
                    print("half written", flush=True); time.sleep(60)
                handle.write = write
            return handle
        io.open = builtins.open = slow_open
        RunRecord("medlama", "d", "full", "test", "contrastive", "m", 1, metrics={{"acc@1": 0.9}}).save({str(target)!r})
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "half written"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        child.kill()
    assert target.read_bytes() == b'{"metrics": {"acc@1": 0.42}}\n'
    leftovers = [p.name for p in tmp_path.iterdir() if p != target]
    assert all(name.startswith(".results-tmp-") for name in leftovers)  # hidden, beside the target


def test_plot_path_without_a_suffix_is_written_as_png_at_that_path(synthetic_medlama_hub, tmp_path, monkeypatch):
    out_dir = tmp_path / "outputs"
    run_lookup(monkeypatch, synthetic_medlama_hub, out_dir, plot=str(out_dir / "bars"), predictions=None)
    assert (out_dir / "bars").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(os.listdir(out_dir)) == ["bars", "results.json", "results.outcomes.jsonl"]  # not bars.png beside it
    assert json.loads((out_dir / "results.json").read_text())["counts"]["queries"] == 57


def test_demo_out_that_is_a_file_is_one_line_before_any_step(tmp_path, nothing_loads, capsys):
    (tmp_path / "taken").write_text("a file")
    assert main(["demo", "--out", str(tmp_path / "taken"), "--sample", "--skip-mst"]) == 2
    assert f"--out {tmp_path / 'taken'} is a file; give a folder" in one_error_line(capsys)


def test_demo_refuses_a_folder_holding_files_it_did_not_write_before_any_step(tmp_path, nothing_loads, capsys, monkeypatch):
    """Measured before: `demo --out D` replaced a user's D/untuned.json without a word."""
    from medprobe import demo
    from medprobe.cli import demo as demo_command

    out = tmp_path / "D"
    out.mkdir()
    (out / "untuned.json").write_text("my results\n")
    assert main(["demo", "--out", str(out), "--sample", "--skip-mst"]) == 2
    err = one_error_line(capsys)
    assert f"--out {out} holds files it did not write (untuned.json)" in err and "--overwrite" in err
    assert (out / "untuned.json").read_text() == "my results\n"
    # what an earlier demo recorded writing (demo.json) passes the check: the steps then run (none here)
    demo.record_files(out)
    monkeypatch.setattr(demo_command, "DEMO_STEPS", [])
    monkeypatch.setattr("medprobe.models.check_model", lambda model: None)
    assert main(["demo", "--out", str(out), "--sample", "--skip-mst"]) == 0
    assert f"{out} holds an earlier demo; this one replaces it" in capsys.readouterr().out
    assert sorted(os.listdir(out)) == ["demo.json", "demo.log"]  # one demo folder is one demo: the earlier one is gone
    (out / "demo.log").write_text("edited since\n")
    assert main(["demo", "--out", str(out), "--sample", "--skip-mst"]) == 2
    assert "changed since it wrote them (demo.log)" in one_error_line(capsys)
    assert main(["demo", "--out", str(out), "--sample", "--skip-mst", "--overwrite"]) == 0
