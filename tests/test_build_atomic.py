"""`medprobe build` never destroys what was there: failures, Ctrl-C, SIGTERM and SIGKILL leave OUT as it
was, byte for byte; a second build into OUT is refused; a folder that is not our build is refused; a
build of some configs keeps the others; the card records how each config was built and publish checks it.

The signal tests run the real command line in a subprocess (tests/build_pause.py pauses it at a named
step of the build, so the signal lands at a known point) over a good build of the synthetic release.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from datasets import load_dataset

import medprobe.atomic_folder as atomic_folder
import medprobe.building.build as build_module
from built_folder import data_file
from medprobe.atomic_folder import FolderLocked, exchange, out_lock
from medprobe.building.build import BuildError, build
from medprobe.cli import main
from medprobe.hub.checks import PublishError, check_dataset_folder
from synthetic_medlama import release_row, write_release

PROBERS_HOME = Path(build_module.__file__).resolve().parents[2]  # the folder that holds the probers package
PAUSE = Path(__file__).resolve().parent / "build_pause.py"
# The synthetic release has 3 rows per relation and changed_release() adds one: any count is fine here.
ANY_COUNT = {"rows_per_relation": 0}
ANY_COUNT_CLI = ["--set", "rows_per_relation=0"]
SMALL_MST = {"train_size": 30, "validation_size": 6, "test_size": 12}


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder`: relative path -> sha256 (or "folder")."""
    return {
        p.relative_to(folder).as_posix(): "folder" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
    }


def leftovers(out: Path) -> list[str]:
    """What a build left beside OUT: staging folders and lock files."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.medprobe-"))


def card_yaml(out: Path) -> dict:
    return yaml.safe_load((out / "README.md").read_text(encoding="utf-8").split("---\n")[1])


@pytest.fixture
def release(tmp_path) -> Path:
    return write_release(tmp_path / "release")


@pytest.fixture
def good(release, tmp_path) -> Path:
    """A good full + hard build of the synthetic release, in its own folder."""
    out = tmp_path / "builds" / "OUT"
    build("medlama", out, data_dir=str(release), params=ANY_COUNT)
    return out


def changed_release(release: Path) -> Path:
    """The release with one more `may_treat` row, so a rebuild writes other bytes than the good build."""
    with open(release / "2021AA" / "may_treat_1000.csv", "a", encoding="utf-8", newline="") as handle:
        row = release_row("may_treat", "C9000009", "Thetaine", [("C9000109", "Thetaine poisoning")])  # easy: hard is unchanged
        csv.DictWriter(handle, fieldnames=list(row)).writerow(row)
    return release


# --- failures and in-process interruptions ---------------------------------------------------------


def test_failing_rebuild_leaves_out_byte_identical(good, release):
    """Measured before: full rewritten with one more row, hard failed, and the card still said the old rows."""
    before = snapshot(good)
    changed_release(release)
    next((release / "2021AA").glob("may_treat_*_hard.csv")).unlink()  # full builds, hard fails
    with pytest.raises(FileNotFoundError, match="may_treat"):
        build("medlama", good, data_dir=str(release), params=ANY_COUNT)
    assert snapshot(good) == before
    assert leftovers(good) == []


def test_interrupt_between_configs_leaves_out_byte_identical(good, release, monkeypatch):
    before = snapshot(good)
    written = build_module.write_config

    def then_interrupt(*args, **kwargs):
        written(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "write_config", then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        build("medlama", good, data_dir=str(changed_release(release)), params=ANY_COUNT)
    assert snapshot(good) == before and leftovers(good) == []


def test_staged_build_that_does_not_load_with_its_rows_is_not_swapped_in(good, release, monkeypatch):
    before = snapshot(good)
    written = build_module.write_config

    def and_twice_the_rows(folder, config, dataset_dict):
        files = written(folder, config, dataset_dict)
        first = folder / next(iter(files))
        table = pq.read_table(first)
        pq.write_table(pa.concat_tables([table, table]), first)  # loads twice the rows counted
        return files

    monkeypatch.setattr(build_module, "write_config", and_twice_the_rows)
    with pytest.raises(BuildError, match=r"staged build of config 'full' does not load .*num_examples=114"):
        build("medlama", good, data_dir=str(release), params=ANY_COUNT)
    assert snapshot(good) == before and leftovers(good) == []


# --- real signals in a subprocess ------------------------------------------------------------------


def start_paused(step: str, argv: list[str], *options: str) -> subprocess.Popen:
    """`medprobe ARGV` in a subprocess, paused after `step` (tests/build_pause.py, given its OPTIONS);
    SIGINT as in a terminal."""
    # the subprocess imports the same probers as this test (a checkout, or the installed wheel in CI), and the test helpers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROBERS_HOME), str(PAUSE.parent), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen(
        [sys.executable, str(PAUSE), *options, step, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # a shell without job control starts background commands with SIGINT ignored; a user's Ctrl-C is not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for line in process.stdout:  # what the command prints before the pause (a probe's table) is read past
        if line.strip() == f"PAUSED after {step}":
            return process
    process.kill()
    raise AssertionError(f"`medprobe {' '.join(argv[:1])}` did not reach {step}: {process.communicate()[1][-2000:]}")


def start_paused_build(step: str, args: list[str]) -> subprocess.Popen:
    """`medprobe build ARGS` in a subprocess, paused after `step`."""
    return start_paused(step, ["build", *args])


def signal_and_wait(process: subprocess.Popen, signum: int) -> tuple[int, str]:
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    return process.returncode, err


@pytest.mark.parametrize(
    "signum, step",
    [
        (signal.SIGINT, "write_config"),  # between the two configs
        (signal.SIGINT, "check_staged_build"),  # everything staged and checked: just before the swap
        (signal.SIGTERM, "write_card"),
    ],
)
def test_ctrl_c_and_sigterm_leave_out_byte_identical_and_nothing_beside_it(good, release, signum, step):
    """Measured before: a build stopped by SIGTERM exited 130, the code of SIGINT."""
    before = snapshot(good)
    process = start_paused_build(
        step, ["medlama", *ANY_COUNT_CLI, "--data-dir", str(changed_release(release)), "--out", str(good)]
    )
    assert any(name.startswith(".OUT.medprobe-tmp-") for name in leftovers(good)), "the build was staging"
    code, err = signal_and_wait(process, signum)
    expected = (130, "interrupted") if signum == signal.SIGINT else (143, "terminated")
    assert (code, err.strip().splitlines()[-1]) == expected and "Traceback" not in err
    assert snapshot(good) == before
    assert leftovers(good) == []


@pytest.mark.parametrize("step", ["write_config", "check_staged_build"])
def test_sigkill_leaves_out_byte_identical_and_the_next_build_removes_the_leftover(good, release, step):
    before = snapshot(good)
    process = start_paused_build(
        step, ["medlama", *ANY_COUNT_CLI, "--data-dir", str(changed_release(release)), "--out", str(good)]
    )
    signal_and_wait(process, signal.SIGKILL)
    assert snapshot(good) == before
    (stage,) = [name for name in leftovers(good) if ".medprobe-tmp-" in name]
    assert load_dataset(str(good), split="test").num_rows == 19 * 3  # OUT loads as the good build
    report = build("medlama", good, data_dir=str(release), configs=["hard"], params=ANY_COUNT)
    assert any(stage in note for note in report.notes)
    assert leftovers(good) == []


def test_sigkill_during_a_first_build_leaves_no_out(release, tmp_path):
    """Measured before: a killed first build left a cardless OUT that loaded full and hard concatenated."""
    out = tmp_path / "new" / "OUT"
    process = start_paused_build("write_config", ["medlama", *ANY_COUNT_CLI, "--data-dir", str(release), "--out", str(out)])
    signal_and_wait(process, signal.SIGKILL)
    assert not out.exists()
    build("medlama", out, data_dir=str(release), params=ANY_COUNT)
    assert leftovers(out) == [] and load_dataset(str(out), split="test").num_rows == 19 * 3


def test_killed_mst_reseed_leaves_the_seed_42_build(tmp_path):
    """Measured before: an interrupted --set seed=7 rebuild left seed-7 and seed-42 configs under one card."""
    out = tmp_path / "mst"
    build("mst", out, params=SMALL_MST)
    before = snapshot(out)
    sizes = [word for key, value in SMALL_MST.items() for word in ("--set", f"{key}={value}")]
    process = start_paused_build("write_config", ["mst", "--out", str(out), "--set", "seed=7", *sizes])
    signal_and_wait(process, signal.SIGKILL)
    assert snapshot(out) == before
    assert {c["parameters"]["seed"] for c in card_yaml(out)["medprobe_build"]["configs"].values()} == {42}


def test_a_second_build_into_the_same_out_stops_at_once(good, release, capsys):
    """Measured before: two concurrent builds into one OUT mixed their outputs; then, a FolderLocked traceback, exit 1."""
    process = start_paused_build("write_config", ["medlama", *ANY_COUNT_CLI, "--data-dir", str(release), "--out", str(good)])
    try:
        start = time.perf_counter()
        with pytest.raises(FolderLocked, match=rf"another `medprobe build` \(pid {process.pid}\) is writing this folder"):
            build("medlama", good, data_dir=str(release), params=ANY_COUNT)
        assert time.perf_counter() - start < 2
        assert main(["build", "medlama", *ANY_COUNT_CLI, "--data-dir", str(release), "--out", str(good)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"medprobe: error: {good}: another `medprobe build` (pid {process.pid})") and err.count("\n") == 1
    finally:
        signal_and_wait(process, signal.SIGTERM)
    build("medlama", good, data_dir=str(release), params=ANY_COUNT)  # the lock went with the first build


def test_lock_is_refused_in_process_too_and_released(tmp_path):
    out = tmp_path / "OUT"
    with out_lock(out):
        with pytest.raises(FolderLocked, match="another `medprobe build`"):
            build("mst", out, configs=["comparison"], params=SMALL_MST)
    assert leftovers(out) == []
    build("mst", out, configs=["comparison"], params=SMALL_MST)


# --- the swap --------------------------------------------------------------------------------------


def test_exchange_swaps_two_folders_in_one_step(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_text("a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "y").write_text("b")
    try:
        exchange(tmp_path / "a", tmp_path / "b")
    except OSError as err:
        pytest.skip(f"renameat2(RENAME_EXCHANGE) is not available here ({err}); builds use two renames")
    assert (tmp_path / "a" / "y").read_text() == "b" and (tmp_path / "b" / "x").read_text() == "a"


def test_without_exchange_the_two_rename_swap_gives_the_same_build(good, release, monkeypatch):
    def unsupported(a, b):
        raise OSError(38, "renameat2 is not available")

    monkeypatch.setattr(atomic_folder, "exchange", unsupported)
    build("medlama", good, data_dir=str(changed_release(release)), configs=["full"], params=ANY_COUNT)
    assert load_dataset(str(good), "full", split="test").num_rows == 19 * 3 + 1
    assert load_dataset(str(good), "hard", split="test").num_rows == 19 * 2
    assert leftovers(good) == []


def test_a_swap_killed_between_its_two_renames_is_undone_by_the_next_build(good, release):
    """The two-rename swap moves OUT into the staging folder first; a kill there leaves no OUT.
    The next build puts it back before anything else, even when that build fails."""
    before = snapshot(good)
    stage = good.parent / ".OUT.medprobe-tmp-999999"
    stage.mkdir()
    os.rename(good, stage / "old")  # the state a SIGKILL between the renames leaves
    (stage / "out").mkdir()
    with pytest.raises(FileNotFoundError):
        build("medlama", good, data_dir=str(release / "nowhere"), params=ANY_COUNT)
    assert snapshot(good) == before and leftovers(good) == []


# --- what OUT may hold -----------------------------------------------------------------------------


def test_a_foreign_readme_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "OUT"
    out.mkdir()
    (out / "README.md").write_text("# My notes\n")
    before = snapshot(out)
    with pytest.raises(BuildError, match="a README.md that is not a medprobe dataset card.*--overwrite"):
        build("mst", out, configs=["comparison"], params=SMALL_MST)
    assert snapshot(out) == before
    build("mst", out, configs=["comparison"], params=SMALL_MST, overwrite=True)
    assert not (out / "README.md").read_text().startswith("# My notes")


def test_files_without_a_card_are_refused_and_named(tmp_path):
    out = tmp_path / "OUT"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "thesis.tex").write_text("x")
    with pytest.raises(BuildError, match=r"1 file\(s\): sub/thesis.tex, and no README.md"):
        build("mst", out, configs=["comparison"], params=SMALL_MST)


def test_an_empty_folder_is_built_into(tmp_path):
    out = tmp_path / "OUT"
    out.mkdir()
    build("mst", out, configs=["comparison"], params=SMALL_MST)
    assert (out / "README.md").is_file()


def test_another_benchmarks_build_is_refused_unless_overwrite(good):
    before = snapshot(good)
    with pytest.raises(BuildError, match="holds a medprobe build of 'medlama' .*not of 'mst'"):
        build("mst", good, params=SMALL_MST)
    assert snapshot(good) == before


def test_files_that_are_not_part_of_the_build_are_refused(good, release):
    (good / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match="not part of its build: notes.txt"):
        build("medlama", good, data_dir=str(release), params=ANY_COUNT)
    assert (good / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace("## ", "## Notes from our lab\n\nOur own words.\n\n## ", 1),
        lambda text: text.replace("pretty_name: ", "pretty_name: Ours ", 1),
    ],
    ids=["text", "yaml"],
)
def test_a_rebuild_refuses_a_hand_edited_card_unless_overwrite(good, release, edit):
    """Measured before: a rebuild regenerated a hand-edited card silently (profile refused the same case)."""
    card = good / "README.md"
    card.write_text(edit(card.read_text(encoding="utf-8")), encoding="utf-8")
    before = snapshot(good)
    with pytest.raises(BuildError, match="README.md was changed since medprobe built it .*pass --overwrite"):
        build("medlama", good, data_dir=str(release), params=ANY_COUNT)
    assert snapshot(good) == before
    build("medlama", good, data_dir=str(release), params=ANY_COUNT, overwrite=True)
    assert "Our own words." not in card.read_text(encoding="utf-8") and "Ours " not in card.read_text(encoding="utf-8")


def test_a_rebuild_of_an_unedited_card_goes_ahead(good, release):
    build("medlama", good, data_dir=str(release), params=ANY_COUNT, configs=["hard"])  # keeps full, rewrites the card


def test_an_older_card_without_the_record_is_refused_unless_overwrite(good, release):
    card = good / "README.md"
    meta = card_yaml(good)
    del meta["medprobe_build"]
    card.write_text(f"---\n{yaml.safe_dump(meta)}---\nbody\n", encoding="utf-8")
    with pytest.raises(BuildError, match="without the `medprobe_build:` record"):
        build("medlama", good, data_dir=str(release), configs=["hard"], params=ANY_COUNT)
    build("medlama", good, data_dir=str(release), overwrite=True, params=ANY_COUNT)
    assert set(card_yaml(good)["medprobe_build"]["configs"]) == {"full", "hard", "variants"}


# --- building some configs -------------------------------------------------------------------------


def test_building_one_config_keeps_the_others_and_the_default(good, release):
    """Measured before: `--config hard` dropped full from the card and made hard the default."""
    full = data_file(good, "full").relative_to(good).as_posix()
    full_before = snapshot(good)[full]
    report = build("medlama", good, data_dir=str(release), configs=["hard"], params=ANY_COUNT)
    assert report.kept == ["full", "variants"] and list(report.rows) == ["hard"]
    meta = card_yaml(good)
    assert [c["config_name"] for c in meta["configs"]] == ["full", "hard", "variants"]
    assert [c["config_name"] for c in meta["configs"] if c.get("default")] == ["full"]
    assert snapshot(good)[full] == full_before and data_file(good, "full") == good / full
    assert load_dataset(str(good), split="test").num_rows == 19 * 3  # the default is still full
    check_dataset_folder(good, [])


def test_keeping_configs_built_with_other_parameters_is_refused(tmp_path):
    out = tmp_path / "mst"
    build("mst", out, configs=["comparison", "sorting"], params=SMALL_MST)
    before = snapshot(out)
    with pytest.raises(BuildError, match="'comparison', which this build keeps, was built with seed=42; this build uses seed=7"):
        build("mst", out, configs=["sorting"], params={**SMALL_MST, "seed": 7})
    assert snapshot(out) == before
    build("mst", out, params={**SMALL_MST, "seed": 7}, configs=["comparison", "sorting"])  # all of them: fine


def test_a_kept_config_whose_file_changed_is_refused(good, release):
    full = data_file(good, "full")
    full.write_bytes(b"not parquet")
    with pytest.raises(BuildError, match=f"{full.relative_to(good)} of config 'full' is missing or changed"):
        build("medlama", good, data_dir=str(release), configs=["hard"], params=ANY_COUNT)


def test_a_kept_config_of_an_older_build_gets_its_content_name(good, release):
    """An older medprobe named data files `<split>-00000-of-00001.parquet`; kept, such a file keeps its
    bytes and record, and takes the name that carries its content hash, like every file of the build."""
    full = data_file(good, "full")
    old_name = "full/test-00000-of-00001.parquet"
    full.rename(good / old_name)
    card = good / "README.md"
    older = re.sub(r"\n  card_sha256: \w+", "", card.read_text(encoding="utf-8"))  # an older build recorded no card digest
    card.write_text(older.replace(full.relative_to(good).as_posix(), old_name), encoding="utf-8")
    kept = card_yaml(good)["medprobe_build"]["configs"]["full"]
    assert list(kept["files"]) == [old_name]
    build("medlama", good, data_dir=str(release), configs=["hard"], params=ANY_COUNT)
    assert not (good / old_name).exists() and data_file(good, "full") == full
    renamed = {full.relative_to(good).as_posix(): kept["files"][old_name]}
    assert card_yaml(good)["medprobe_build"]["configs"]["full"] == kept | {"files": renamed}
    assert load_dataset(str(good), "full", split="test").num_rows == 19 * 3
    check_dataset_folder(good, [])


def test_the_card_records_parameters_source_rows_and_file_hashes(tmp_path, release):
    out = tmp_path / "mst"
    build("mst", out, configs=["sorting"], params={**SMALL_MST, "seed": 7, "list_length": 4})
    record = card_yaml(out)["medprobe_build"]
    assert record["benchmark"] == "mst"
    sorting = record["configs"]["sorting"]
    assert sorting["source"] == "generated"
    assert sorting["parameters"]["seed"] == 7 and sorting["parameters"]["list_length"] == 4
    assert sorting["parameters"]["train_size"] == 30
    assert sorting["rows"] == {"train": 30, "validation": 6, "test": 12}
    on_disk = {path: digest for path, digest in snapshot(out).items() if path.startswith("sorting/") and digest != "folder"}
    assert sorting["files"] == on_disk and len(on_disk) == 3
    # each file is named by its content: a rebuild with other rows is a new path, so no cache serves the old rows
    assert set(on_disk) == {
        f"sorting/{split}-00000-of-00001-{on_disk[str(data_file(out, 'sorting', split).relative_to(out))][:16]}.parquet"
        for split in ("train", "validation", "test")
    }
    paths = [
        {"split": split, "path": str(data_file(out, "sorting", split).relative_to(out))}
        for split in ("train", "validation", "test")
    ]
    assert [c["data_files"] for c in card_yaml(out)["configs"]] == [paths]  # exact paths: a pattern is not in datasets' cache key
    medlama = card_yaml(build("medlama", tmp_path / "m", data_dir=str(release), configs=["full"], params=ANY_COUNT).out)[
        "medprobe_build"
    ]
    assert medlama["configs"]["full"]["source"] == "data_dir" and str(release) not in str(medlama)


# --- publish checks the record ---------------------------------------------------------------------


def test_publish_refuses_configs_mixed_from_two_builds(tmp_path):
    """Measured before: seed-7 and seed-42 configs under one card passed the publish dry run."""
    seed42, seed7 = tmp_path / "seed42", tmp_path / "seed7"
    build("mst", seed42, configs=["comparison", "sorting"], params=SMALL_MST)
    build("mst", seed7, configs=["sorting"], params={**SMALL_MST, "seed": 7})
    for split in ("train", "validation", "test"):
        shutil.copy(data_file(seed7, "sorting", split), data_file(seed42, "sorting", split))  # bytes of another build
    train = data_file(seed42, "sorting", "train").relative_to(seed42)
    with pytest.raises(PublishError, match=rf"{train} \(config 'sorting'\) is not the file"):
        check_dataset_folder(seed42, [])


def test_publish_refuses_a_card_whose_configs_and_record_disagree(good):
    card = good / "README.md"
    meta, body = card_yaml(good), card.read_text(encoding="utf-8").split("---\n", 2)[2]
    del meta["medprobe_build"]["configs"]["hard"]
    card.write_text(f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n{body}", encoding="utf-8")
    with pytest.raises(
        PublishError, match=r"`configs:` \(full, hard, variants\) and its `medprobe_build:` record \(full, variants\) disagree"
    ):
        check_dataset_folder(good, [])


def test_publish_refuses_a_card_without_the_record(good):
    card = good / "README.md"
    meta, body = card_yaml(good), card.read_text(encoding="utf-8").split("---\n", 2)[2]
    del meta["medprobe_build"]
    card.write_text(f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n{body}", encoding="utf-8")
    with pytest.raises(PublishError, match="no `medprobe_build:` record.*rebuild the folder with this medprobe"):
        check_dataset_folder(good, [])


# --- the command line ------------------------------------------------------------------------------


def test_ctrl_c_anywhere_in_the_cli_prints_one_line_and_exits_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("medprobe.cli.build.run_build", interrupted)
    assert main(["build", "mst", "--out", "unused"]) == 130
    out, err = capsys.readouterr()
    assert err == "interrupted\n" and out == ""


def test_cli_refusal_is_one_line(good, capsys):
    assert main(["build", "mst", "--out", str(good)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("medprobe: error:") and "--overwrite" in err and "Traceback" not in err
