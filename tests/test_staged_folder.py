"""The one staged-folder writer (medprobe.atomic_folder.staged_folder) and the one run journal (medprobe.journal).

The commands' own kill, interrupt and lock tests (test_build_atomic, test_profile_folder, test_lm_eval_export,
test_review, test_reproduce) run through these; here each piece alone, in process and fast.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from medprobe.atomic_folder import FolderLocked, out_lock, staged_folder
from medprobe.contracts import UserError
from medprobe.digests import sha256_text
from medprobe.journal import JOURNAL, Journal, Journaled, NotReusable, adopt_files, latest

PACKAGE = Path(__file__).resolve().parents[1] / "medprobe"


def beside(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.medprobe-"))


def refuse_any(out: Path) -> None:
    if out.is_dir() and any(out.iterdir()):
        raise UserError(f"{out} holds files")


def test_the_block_s_folder_replaces_out_whole_and_nothing_is_left_beside_it(tmp_path):
    out = tmp_path / "OUT"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with staged_folder(out, "test") as folder:
        folder.write_texts({"a.txt": "a", "sub/b.txt": "b"})
        assert not (out / "a.txt").exists()  # nothing in OUT until the block ends
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == ["a.txt", "sub/b.txt"]
    assert beside(out) == []


@pytest.mark.parametrize("error", [RuntimeError("failed"), KeyboardInterrupt()])
def test_an_error_or_ctrl_c_in_the_block_leaves_out_as_it_was_and_nothing_beside_it(tmp_path, error):
    out = tmp_path / "OUT"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(type(error)):
        with staged_folder(out, "test") as folder:
            folder.write_texts({"new.txt": "new"})
            raise error
    assert [p.name for p in out.iterdir()] == ["old.txt"] and beside(out) == []


def test_the_command_s_refusal_runs_under_the_lock_and_not_under_overwrite(tmp_path):
    out = tmp_path / "OUT"
    out.mkdir()
    (out / "mine.txt").write_text("mine")
    seen = []

    def refuse(folder: Path) -> str:
        seen.append(beside(out))  # the lock is held while the command looks at OUT
        refuse_any(folder)
        return "owned"

    with pytest.raises(UserError, match="holds files"):
        with staged_folder(out, "test", refuse=refuse):
            pytest.fail("the block ran")
    assert seen == [[".OUT.medprobe-lock"]] and (out / "mine.txt").exists() and beside(out) == []
    with staged_folder(out, "test", refuse=refuse, overwrite=True) as folder:
        assert folder.owned is None and len(seen) == 1
        folder.write_texts({"new.txt": "new"})
    assert [p.name for p in out.iterdir()] == ["new.txt"]


def test_a_second_writer_stops_at_once_naming_the_first_and_an_unwritable_out_before_the_lock(tmp_path):
    out = tmp_path / "OUT"
    with out_lock(out, "profile"):
        with pytest.raises(FolderLocked, match=r"another `medprobe profile` \(pid \d+\) is writing this folder"):
            with staged_folder(out, "build"):
                pytest.fail("the block ran")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is a file; give a folder"):
        with staged_folder(tmp_path / "file", "build"):
            pytest.fail("the block ran")


def test_leftovers_of_killed_writers_are_removed_but_the_one_a_resumable_writer_takes(tmp_path):
    out = tmp_path / "OUT"
    old, older = tmp_path / ".OUT.medprobe-tmp-999998", tmp_path / ".OUT.medprobe-tmp-999999"
    for stage in (old, older):
        (stage / "out").mkdir(parents=True)
    Journal([Journaled("run", "key", {})]).write(old / JOURNAL)
    notes: list[str] = []
    with staged_folder(out, "test", resume=latest, notes=notes.append) as folder:
        assert folder.previous == old and old.is_dir() and not older.exists()
        assert notes == [f"removed {older.name}, left beside OUT by a killed medprobe process"]
    assert not old.exists() and beside(out) == []  # taken from, then dropped with the swap


def test_every_folder_writer_stages_through_the_one_staged_writer():
    """No module but atomic_folder assembles a staging folder or a swap (reproduce writes OUT in place, under the lock)."""
    pieces = re.compile(r"\b(swap_into_place|stage_prefix|clean_leftovers|leftover_stages|prepare_parent|out_lock)\(")
    found = {
        path.relative_to(PACKAGE).as_posix(): sorted(set(pieces.findall(path.read_text(encoding="utf-8"))))
        for path in PACKAGE.rglob("*.py")
        if path.name != "atomic_folder.py"
    }
    assert {name: used for name, used in found.items() if used} == {"reproduce/runner.py": ["out_lock", "prepare_parent"]}


# --- the run journal ---------------------------------------------------------------------------------


def test_a_journal_takes_a_run_of_the_same_key_only_when_its_files_verify():
    journal = Journal([Journaled("a", "ka", {"n": 1}), Journaled("b", "kb", {"n": 2}), Journaled("c", "kc", {"n": 3})])

    def verify(name: str, run: Journaled) -> dict:
        if run.name == "b":
            raise NotReusable("b changed")
        return {**run.entry, "as": name}

    resumed = journal.resume([("a", "ka"), ("b", "kb"), ("c", "another request")], verify)
    assert resumed.taken == {"a": {"n": 1, "as": "a"}} and resumed.taken_from == {"a": "a"}
    assert resumed.refused == [("b", "b changed")]


def test_a_journal_file_reads_back_and_a_broken_one_reads_as_empty(tmp_path):
    journal = Journal()
    journal.finished("a", "k1", {"files": {}})
    journal.finished("a", "k2", {"files": {"x": "y"}})  # a run journaled again replaces its entry
    journal.write(tmp_path / JOURNAL)
    assert Journal.read(tmp_path / JOURNAL).runs == [Journaled("a", "k2", {"files": {"x": "y"}})]
    (tmp_path / JOURNAL).write_bytes(b"\xff\xfe not json")
    assert Journal.read(tmp_path / JOURNAL).runs == [] and Journal.read(tmp_path / "absent.json").runs == []


def test_a_run_s_files_are_adopted_only_when_every_one_is_unchanged(tmp_path):
    source, target = tmp_path / "killed", tmp_path / "new"
    (source / "runs").mkdir(parents=True)
    (source / "runs" / "r.json").write_text("{}")
    files = {"runs/r.json": sha256_text("{}")}
    assert not adopt_files(source, target, {"runs/r.json": sha256_text("other")}) and (source / "runs" / "r.json").exists()
    assert adopt_files(source, target, files) and (target / "runs" / "r.json").read_text() == "{}"
