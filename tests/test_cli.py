"""The `medprobe` command line: help, build, and errors printed without a traceback."""

import subprocess
import sys
from pathlib import Path

from medprobe.cli import main
from synthetic_medlama import CLI_PARAMS, write_release


def test_help_lists_the_commands(capsys):
    try:
        main(["--help"])
    except SystemExit as exit_:
        assert exit_.code == 0
    assert "build" in capsys.readouterr().out


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "medprobe"
    assert script.is_file(), "pip install should create the medprobe console command"
    result = subprocess.run([str(script), "build", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "--data-dir" in result.stdout and "medlama" in result.stdout


def test_build_prints_sizes(tmp_path, capsys):
    release = write_release(tmp_path / "release")
    assert main(["build", "medlama", "--data-dir", str(release), "--out", str(tmp_path / "hub"), *CLI_PARAMS]) == 0
    out = capsys.readouterr().out
    assert "medlama/full: test 57 rows" in out and "medlama/hard: test 38 rows" in out


def test_user_errors_exit_2_with_one_line(tmp_path, capsys):
    code = main(["build", "medlama", "--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "hub"), "--config", "full"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("medprobe: error:") and "Traceback" not in err and "nowhere does not exist" in err


def test_unknown_config_exit_2(tmp_path, capsys):
    code = main(["build", "medlama", "--out", str(tmp_path), "--config", "medium"])
    assert code == 2 and "expected one of: full, hard" in capsys.readouterr().err


def test_a_benchmarks_own_build_option_comes_from_its_registry_entry(tmp_path, capsys):
    from medprobe.registry import task_entry

    options = task_entry("medlama").build_options
    assert [option.flag for option in options] == ["--umls-dir", "--synonyms"]
    try:
        main(["build", "--help"])
    except SystemExit as exit_:
        assert exit_.code == 0
    out = capsys.readouterr().out
    assert all(f"{option.flag} {option.metavar}" in out for option in options)
    option = options[0]
    # given for another benchmark it is refused, naming its owner, before anything is built
    assert main(["build", "mst", option.flag, str(tmp_path), "--out", str(tmp_path / "hub")]) == 2
    assert f"{option.flag} is an option of `medprobe build medlama`, not of mst" in capsys.readouterr().err
    assert not (tmp_path / "hub").exists()
