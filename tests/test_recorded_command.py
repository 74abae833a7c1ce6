"""The `command` a results JSON records repeats the run anywhere: it names the device and dtype the run resolved.

Measured before (issue 31): a run with `--device auto` recorded `--device auto` and no `--dtype`; on a CUDA machine
that command would run in bfloat16 (the GPU default of `--dtype auto`) while the record says float32.
"""

import json
import shlex
from types import SimpleNamespace

import pytest

from medprobe import distributed
from medprobe.cli import main
from medprobe.run import RunRequest, probe_argv
from tiny_bert import save_tiny_bert


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


def test_a_run_with_device_auto_records_the_device_and_dtype_it_ran_with_plumbing_tiny_random_bert(
    synthetic_medlama_hub, tiny_model, tmp_path
):
    """Measured before: the recorded command ended `--device auto`, with no --dtype."""
    first = tmp_path / "first.json"
    argv = ["probe", "--dataset", str(synthetic_medlama_hub), "--config", "hard", "--prober", "contrastive"]
    argv += ["--model", str(tiny_model), "--per-relation", "2", "--out", str(first), "--predictions", str(tmp_path / "a.jsonl")]
    assert main([*argv, "--device", "auto", "--dtype", "auto"]) == 0
    record = json.loads(first.read_text())
    words = shlex.split(record["command"])
    assert "auto" not in words and words.count("--device") == 1 and words.count("--dtype") == 1
    assert words[words.index("--device") + 1] == "cpu" and words[words.index("--dtype") + 1] == record["settings"]["dtype"]
    assert record["settings"]["dtype"] == "float32"
    # the recorded command, run again, is the same run
    again = {"--out": str(tmp_path / "again.json"), "--predictions": str(tmp_path / "b.jsonl")}
    assert main([again.get(flag, word) for flag, word in zip(["", *words[1:]], words[1:])]) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    expected = record["command"].replace(str(first), again["--out"]).replace(str(tmp_path / "a.jsonl"), again["--predictions"])
    assert json.loads((tmp_path / "again.json").read_text())["command"] == expected


def request(**options) -> RunRequest:
    return RunRequest(task="medlama", prober="contrastive", dataset="d", model="m", out="r.json", device="auto", **options)


def prober(device: str, dtype: str) -> SimpleNamespace:
    """What a prober tells of itself after loading: its torch device and its settings."""
    import torch

    return SimpleNamespace(device=torch.device(device), settings={"dtype": dtype})


def test_the_command_names_the_prober_s_resolved_device_and_dtype_replacing_those_given():
    argv = probe_argv(request(prober_options={"dtype": "auto"}), prober("cpu", "bfloat16"))
    assert argv[argv.index("--device") + 1] == "cpu" and argv.count("--dtype") == 1
    assert argv[argv.index("--dtype") + 1] == "bfloat16"
    assert "auto" not in probe_argv(request(), prober("cpu", "float32"))
    assert probe_argv(request())[-2:] == ["--device", "auto"]  # no prober (profile's plan): the request as given


def test_under_a_launch_the_command_keeps_the_device_as_given(monkeypatch):
    """Under accelerate/torchrun each process resolves `auto` to its own GPU: cuda:1 would send every process to one."""
    monkeypatch.setattr(distributed, "launched", lambda: True)
    argv = probe_argv(request(), prober("cpu", "float32"))
    assert argv[argv.index("--device") + 1] == "auto" and argv[argv.index("--dtype") + 1] == "float32"


def test_a_prober_without_a_dtype_option_gets_no_dtype(monkeypatch):
    from medprobe import registry

    entry = registry.registry().probers["contrastive"]
    without = registry.ProberEntry(**{**vars(entry), "options": tuple(o for o in entry.options if o.dest != "dtype")})
    with registry.using(registry.registry().with_entries(without)):
        argv = probe_argv(request(), prober("cpu", "float32"))
    assert "--dtype" not in argv and argv[argv.index("--device") + 1] == "cpu"
