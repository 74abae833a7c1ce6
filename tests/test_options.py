"""Options several commands share are declared once (medprobe.options): one default, one check, one message."""

from __future__ import annotations

import inspect

import pytest

import medprobe.python_api
import medprobe.stats
from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.options import K_OPTION, RESAMPLES_OPTION, SEED_OPTION
from medprobe.registry import registry
from medprobe.review.report import import_ratings
from medprobe.run import RunRequest, check_request


def exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def test_the_library_defaults_are_the_options_defaults():
    """medprobe.stats imports nothing of medprobe, so it keeps its own constants: they must be the options'."""
    assert (medprobe.stats.RESAMPLES, medprobe.stats.SEED) == (RESAMPLES_OPTION.default, SEED_OPTION.default)
    assert RunRequest(task="t", prober="p", dataset="d").resamples == RESAMPLES_OPTION.default
    for function in (medprobe.python_api.compare, import_ratings):
        parameters = inspect.signature(function).parameters
        assert (parameters["resamples"].default, parameters["seed"].default) == (RESAMPLES_OPTION.default, SEED_OPTION.default)


def test_every_k_option_is_the_registry_s_one():
    ks = [option for entry in registry().tasks.values() for option in entry.options if option.flag == "--k"]
    assert ks and all((k.type, k.default, k.metavar) == (K_OPTION.type, K_OPTION.default, K_OPTION.metavar) for k in ks)


@pytest.mark.parametrize(
    "argv",
    [
        ["probe", "--prober", "contrastive", "--dataset", "d", "--model", "minilm"],
        ["compare", "a.json", "b.json"],
        ["review", "import", "DIR", "sheet.csv"],
    ],
    ids=["probe", "compare", "review-import"],
)
def test_resamples_0_is_refused_alike_on_every_command_line(argv, capsys):
    assert exit_code([*argv, "--resamples", "0"]) == 2
    assert "argument --resamples: expected a positive integer, got 0" in capsys.readouterr().err


def test_resamples_0_is_refused_alike_from_python(tmp_path):
    message = "--resamples must be a positive integer, got 0"
    with pytest.raises(UserError, match=message):
        check_request(RunRequest(task="medlama", prober="contrastive", dataset="d", model="minilm", resamples=0))
    with pytest.raises(UserError, match=message):
        import_ratings(tmp_path, [], resamples=0)
    with pytest.raises(UserError, match=message):
        from medprobe.comparison.compare import compare

        compare([], resamples=0)
