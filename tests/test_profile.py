"""`medprobe profile`: the plan per model kind with its skip reasons, the profile files, the runs going
through the one run loop (same predictions bytes as `medprobe probe`), and `publish results DIR`."""

import argparse
import dataclasses
import hashlib
import json
import os
import shlex
from pathlib import Path

import pytest
from datasets import load_dataset
from huggingface_hub import ModelCard
from transformers import BertConfig, GPT2Config, T5Config

import medprobe.run
from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.digests import sha256_file
from medprobe.models import load_model_kind, model_kind
from medprobe.profiling.plan import ProfileOptions, plan_runs, quick_settings
from medprobe.profiling.profile import Profile, write_profile
from medprobe.profiling.run import run_profile
from medprobe.records import load_record_file
from medprobe.records.outcomes import outcomes_path
from medprobe.records.record import RunRecord
from medprobe.registry import registry, task_entry, using
from medprobe.run import probe_argv
from synthetic_runs import medlama_hits, write_run
from tiny_bert import save_tiny_bert

# the plan's own reason, after what the plan says of every kind it has no prober for
MST_CAUSAL_REASON = f"wrong model kind: the model is a causal LM; {task_entry('mst').profile.skip['causal-lm']}"


def save_config(folder: Path, config, architectures: list[str] | None) -> str:
    config.architectures = architectures
    config.save_pretrained(folder)
    return str(folder)


SMALL = {"vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32}


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("kinds")
    return {
        "encoder": save_config(root / "encoder", BertConfig(**SMALL), ["BertModel"]),
        "masked-lm": save_config(root / "mlm", BertConfig(**SMALL), ["BertForMaskedLM"]),
        "causal-lm": save_config(root / "gpt2", GPT2Config(vocab_size=40, n_embd=16, n_layer=1, n_head=2), ["GPT2LMHeadModel"]),
        "seq2seq": save_config(root / "t5", T5Config(vocab_size=40, d_model=16, num_layers=1), ["T5ForConditionalGeneration"]),
    }


def labels(kind: str, data=frozenset()) -> tuple[list[str], dict[str, str]]:
    runs, skipped = plan_runs(kind, data=data)
    return [run.label for run in runs], {item.benchmark: item.reason for item in skipped}


def test_the_kind_is_read_from_the_model_config(model_folders):
    assert {kind: load_model_kind(folder)[0] for kind, folder in model_folders.items()} == {kind: kind for kind in model_folders}
    # no saved class names: a bidirectional model type is taken as an encoder (it needs no head)
    assert model_kind(BertConfig(**SMALL))[0] == "encoder"
    with pytest.raises(UserError, match="cannot tell what kind"):
        model_kind(type("Config", (), {"model_type": "clip", "architectures": None})())


def test_plan_for_an_encoder_skips_disknE_without_data():
    runs, skipped = labels("encoder")
    assert runs == [
        "medlama-full-contrastive",
        "medlama-hard-contrastive",
        "mst-mlm-head",
        "mst-mlm-head-scratch",
        "context_variance-real-target-contrastive",
    ]
    assert list(skipped) == ["disknE"] and skipped["disknE"].startswith("no data")
    planned, _ = plan_runs("encoder")
    floor = next(run for run in planned if run.floor_of)
    assert floor.prober_options == {"scratch": True} and floor.floor_of == "mst-mlm-head"
    with_data, skipped = labels("encoder", {"disknE"})
    assert with_data[-1] == "disknE-medical_similar-pair-classifier" and skipped == {}


def test_plan_for_a_masked_lm_adds_mask_average():
    runs, skipped = labels("masked-lm")
    assert runs == [
        "medlama-full-contrastive",
        "medlama-full-mask-average",
        "medlama-hard-contrastive",
        "medlama-hard-mask-average",
        "mst-mlm-head",
        "mst-mlm-head-scratch",
        "context_variance-real-target-mask-average",
    ]
    assert list(skipped) == ["disknE"]


def test_plan_for_a_causal_lm_skips_mst_and_disknE_with_reasons():
    runs, skipped = labels("causal-lm", {"disknE"})
    assert runs == ["medlama-full-causal-lm", "medlama-hard-causal-lm", "context_variance-real-target-causal-lm"]
    assert skipped["mst"] == MST_CAUSAL_REASON
    assert skipped["disknE"].startswith("wrong model kind")  # even with its data


def test_plan_for_a_seq2seq_model():
    runs, skipped = labels("seq2seq")
    assert runs == ["medlama-full-generative", "medlama-hard-generative"]
    assert set(skipped) == {"mst", "context_variance", "disknE"}
    assert all(reason.startswith("wrong model kind") for reason in skipped.values())


def test_benchmarks_subset():
    runs, skipped = plan_runs("encoder", ("context_variance",))
    assert [run.label for run in runs] == ["context_variance-real-target-contrastive"] and skipped == []


def test_each_run_is_a_probe_command_that_parses_to_the_same_request():
    from medprobe.cli.probe import parse_probe_arguments

    request = medprobe.run.RunRequest(
        task="mst",
        prober="mlm-head",
        dataset="d/mst",
        model="minilm",
        seed=3,
        prober_options={"scratch": True},
        task_options={"seeds": 1},
        out="runs/x.json",
    )
    args = vars(parse_probe_arguments(probe_argv(request)[1:]))
    assert (args["prober"], args["task"], args["dataset"], args["seed"], args["out"]) == (
        "mlm-head",
        "mst",
        "d/mst",
        3,
        "runs/x.json",
    )
    assert args["scratch"] is True and args["seeds"] == 1
    request = medprobe.run.RunRequest(
        task="medlama",
        prober="contrastive",
        dataset="d",
        config="hard",
        model="m",
        task_options={"k": [1, 10], "per_relation": 10, "predictions": "p.jsonl"},
    )
    args = vars(parse_probe_arguments(probe_argv(request)[1:]))
    assert (args["config"], args["k"], args["per_relation"], args["predictions"]) == ("hard", [1, 10], 10, "p.jsonl")


# --- profile runs with a stand-in run loop (the plumbing, no model) --------------------------------------


def fake_record(request) -> RunRecord:
    if request.task == "medlama":
        metrics, per_group, counts = {"acc@1": 0.01, "acc@10": 0.25}, {"r1": {"acc@1": 0.01, "acc@10": 0.25}}, {"candidates": 200}
    elif request.task == "mst":
        accuracy = 0.3 if request.prober_options.get("scratch") else 0.6
        metrics, counts = {"accuracy": accuracy, "accuracy_std": 0.0}, {}
        per_group = {"comparison": {"accuracy": accuracy, "chance": 0.5}, "sorting": {"accuracy": accuracy, "chance": 0.25}}
    else:
        metrics, per_group, counts = {"understand": 0.4, "confuse": 0.2}, {}, {}
    chance = {"acc@10": 0.05, "accuracy": 0.375, "understand": 0.375}
    intervals = {
        name: {"low": value - 0.1, "high": value + 0.1, "level": 0.95, "n": 40, "method": "made up"}
        for name, value in metrics.items()
    }
    if request.task == "medlama":  # the facets a ranking run records (issue 39), made up
        metrics.update(FACETS)
        clustered = {"low": 0.1, "high": 0.4, "clusters": 30, "design_effect": 1.5, "method": "made up"}
        intervals["acc@10"]["clustered"] = clustered
        for name, value in FACETS.items():
            scale = "count" if name.startswith("answerable") else ("score" if name == "aurc" else "")
            intervals[name] = {**intervals["acc@10"], "low": value / 2, "high": value * 1.5, "facet": "made up", "scale": scale}
    return RunRecord(
        benchmark=request.task,
        dataset=request.dataset,
        config=request.config,
        split=request.split,
        prober=request.prober,
        model=request.model,
        seed=request.seed,
        metrics=metrics,
        per_group=per_group,
        counts=counts,
        task=request.task,
        intervals=intervals,
        chance={name: {"value": chance[name], "method": "made-up chance"} for name in metrics if name in chance},
    )


# facets of a made-up MedLAMA run: those at k = 1 are not beside the headline acc@10
FACETS = {"above_bias@1": 0.01, "above_bias@10": 0.2, "answerable_from_template@10": 12.0, "robust_acc@10": 0.18, "aurc": 0.7}


FAILING: set[str] = set()  # tasks whose stand-in run fails


@pytest.fixture
def fake_run(monkeypatch):
    """medprobe.run.run replaced by one that records the request and writes a made-up RunRecord."""
    requests = []

    def run(request, print_fn=print, entries=None):
        requests.append(request)
        if request.task in FAILING:
            raise UserError("made-up failure")
        record = fake_record(request)
        record.save(request.out)
        if request.task_options.get("predictions"):
            Path(request.task_options["predictions"]).write_text("{}\n")
        return record

    monkeypatch.setattr(medprobe.run, "run", run)
    return requests


@pytest.fixture
def generated_data(monkeypatch):
    """MST and context variance 'built' without building: the plumbing tests need no data."""
    from medprobe.profiling import plan as profile_plan

    def build_into(options, name, data_dir, print_fn):
        return profile_plan.DataSource(
            name, f"{options.out}/datasets/{name}", "generated (stand-in)", sample=name == "context_variance"
        )

    monkeypatch.setattr(profile_plan, "build_into", build_into)


def test_profile_writes_json_md_and_png_with_headline_rows(tmp_path, model_folders, fake_run, generated_data, capsys):
    out = tmp_path / "profile"
    assert main(["profile", "--model", model_folders["encoder"], "--out", str(out), "--quick", "--seed", "5"]) == 0
    printed = capsys.readouterr().out
    assert "run 1/5: medlama/full contrastive" in printed and "run 4/5: mst/all mlm-head (scratch floor)" in printed
    assert "NOT MedLAMA" in printed  # the shipped sample is said to be one
    assert "medprobe-tmp" not in printed and f"data: mst: generated (stand-in) ({out}/datasets/mst)" in printed
    profile = json.loads((out / "profile.json").read_text())
    assert profile["kind"] == "encoder" and profile["settings"]["quick"] is True
    assert [row["run"] for row in profile["headline"]] == [
        "medlama-full-contrastive",
        "medlama-hard-contrastive",
        "mst-mlm-head",
        "context_variance-real-target-contrastive",
    ]
    medlama, mst, context = profile["headline"][0], profile["headline"][2], profile["headline"][3]
    assert (medlama["metric"], medlama["value"], medlama["chance"]) == ("acc@10", 0.25, 0.05)
    assert medlama["chance_source"] == "made-up chance" and medlama["floor"] is None
    assert (medlama["low"], medlama["high"], medlama["n"]) == (0.25 - 0.1, 0.25 + 0.1, 40)
    assert (mst["metric"], mst["value"], mst["chance"], mst["floor"]) == ("accuracy", 0.6, 0.375, 0.3)
    assert "--scratch" in mst["floor_source"]
    assert (context["metric"], context["chance"]) == ("understand", 0.375)
    assert [item["benchmark"] for item in profile["skipped"]] == ["disknE"]
    assert profile["data"]["medlama"]["sample"] is True
    # every run went through the run loop with the quick options, its files under runs/
    assert [(r.task, r.prober, r.seed) for r in fake_run][:2] == [("medlama", "contrastive", 5)] * 2
    # the runs wrote into the staging folder beside OUT; profile.json names the paths they have in OUT
    assert fake_run[0].task_options["predictions"].startswith(str(tmp_path / ".profile.medprobe-tmp-"))
    predictions = str(out / "runs/medlama-full-contrastive.predictions.jsonl")
    # every facet the data allows: the shipped sample's variants config has the other template and synonyms
    assert profile["runs"][0]["request"]["task_options"] == {"per_relation": 10, "predictions": predictions, "variants": "all"}
    assert profile["runs"][0]["predictions"] == predictions and Path(predictions).is_file()
    assert ".medprobe-tmp-" not in (out / "profile.json").read_text() + (out / "runs/mst-mlm-head.json").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile"]  # no lock, no staging folder left beside OUT
    assert fake_run[2].task_options == {"seeds": 1} and fake_run[3].prober_options == {"scratch": True}
    assert load_record_file(out / "runs" / "mst-mlm-head-scratch.json").metrics["accuracy"] == 0.3
    assert all(run["command"].startswith("medprobe probe --prober ") for run in profile["runs"])
    table = (out / "profile.md").read_text()
    assert "| medlama | full | contrastive | acc@10 | 25.00 | 15.00–35.00 | 40 | 5.00 | — |" in table
    assert "| mst | all | mlm-head | accuracy | 60.00 | 50.00–70.00 | 40 | 37.50 | 30.00 |" in table
    assert "| disknE | medical_similar | pair-classifier | — | skipped: no data" in table
    assert str(tmp_path) not in table  # the table may go into a public model card: no local paths
    assert (out / "profile.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_figure_is_left_out_and_said(
    tmp_path, model_folders, fake_run, generated_data, monkeypatch, capsys
):
    from medprobe.profiling import run as profiling_run

    monkeypatch.setattr(profiling_run, "figure_available", lambda: "matplotlib is not installed, so profile.png was not drawn")
    out = tmp_path / "profile"
    run_profile(ProfileOptions(model=model_folders["causal-lm"], out=str(out), benchmarks=("medlama",)))
    assert not (out / "profile.png").exists()
    assert "profile.png was not drawn" in json.loads((out / "profile.json").read_text())["figure_note"]
    assert "profile.png was not drawn" in capsys.readouterr().out


def test_a_failed_run_is_listed_and_the_others_still_run(tmp_path, model_folders, fake_run, generated_data, monkeypatch):
    monkeypatch.setattr(f"{__name__}.FAILING", {"context_variance"})
    out = tmp_path / "profile"
    assert main(["profile", "--model", model_folders["causal-lm"], "--out", str(out)]) == 1
    result = json.loads((out / "profile.json").read_text())
    assert [item["label"] for item in result["failed"]] == ["context_variance-real-target-causal-lm"]
    assert result["headline"][-1]["note"] == "failed: made-up failure"
    assert [row["value"] for row in result["headline"][:2]] == [0.25, 0.25]


def test_a_profile_asks_for_every_facet_the_model_and_data_allow(synthetic_medlama_hub):
    from medprobe.profiling.plan import PlannedRun, facet_options, sample_folder

    sample = str(sample_folder(task_entry("medlama").profile))
    contrastive = PlannedRun("medlama", "medlama", "contrastive", "hard")
    causal = PlannedRun("medlama", "medlama", "causal-lm", "hard")
    # the shipped sample has subject synonyms; the release CSVs have none, so a build of them has the template only
    assert facet_options(contrastive, sample) == ({"variants": "all"}, {})
    assert facet_options(contrastive, str(synthetic_medlama_hub)) == ({"variants": "templates"}, {})
    assert facet_options(causal, sample) == ({"variants": "all"}, {"memorisation": True})  # Min-K%++: causal LMs
    # context variance ranks nothing: no variants option, and no memorisation signal for it
    assert facet_options(PlannedRun("context_variance", "context_variance", "causal-lm", "real-target"), sample) == ({}, {})
    # a floor run is the model run's baseline, asked nothing beyond the defaults
    assert facet_options(PlannedRun("mst", "mst", "mlm-head", None, {"scratch": True}, "mst-mlm-head"), sample) == ({}, {})


def test_the_profile_gives_each_run_a_validity_section(tmp_path, model_folders, fake_run, capsys):
    from types import SimpleNamespace

    from medprobe.profiling.profile import check_headline

    out = tmp_path / "profile"
    argv = ["profile", "--model", model_folders["causal-lm"], "--out", str(out), "--quick", "--benchmarks", "medlama"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert fake_run[0].prober_options == {"memorisation": True} and fake_run[0].task_options["variants"] == "all"
    # the summary: the few facets at the headline's k, then the headline's clustered interval and design effect
    assert "validity: above_bias@10 20.00 [10.00, 30.00]; robust_acc@10 18.00 [9.00, 27.00]; aurc 0.7000 " in printed
    assert "acc@10 clustered [10.00, 40.00] (30 subjects, deff 1.50)" in printed
    profile = json.loads((out / "profile.json").read_text())
    facets = [(row["facet"], row["metric"]) for row in profile["headline"][0]["validity"]]
    assert facets == [("headline", "acc@10")] + [("made up", name) for name in FACETS if not name.endswith("@1")]
    table = (out / "profile.md").read_text()
    assert "## Validity" in table and "item-level one (queries resampled)" in table
    assert "| medlama-hard-causal-lm | headline | acc@10 | 25.00 | [15.00, 35.00] | [10.00, 40.00] | 1.50 | 40 |" in table
    assert "| medlama-full-causal-lm | made up | answerable_from_template@10 | 12 | [6, 18] |" in table  # a count, whole
    assert "| medlama-full-causal-lm | made up | aurc | 0.7000 | [0.3500, 1.0500] |" in table  # a score, as it is
    # the validity rows are the run's: an edited one is refused as an edited headline is
    records = {run["label"]: SimpleNamespace(record=RunRecord(**run["record"])) for run in profile["runs"]}
    check_headline(out, profile, records)
    profile["headline"][0]["validity"][1]["value"] = 0.5
    with pytest.raises(UserError, match="its headline validity of run medlama-full-causal-lm"):
        check_headline(out, profile, records)


def test_bad_data_dirs_stop_before_anything_runs(tmp_path, model_folders, fake_run, capsys):
    model = model_folders["encoder"]
    for value, message in (("medlama", "expected NAME=PATH"), ("umls=/x", "unknown benchmark 'umls'")):
        with pytest.raises(SystemExit, match="2"):
            main(["profile", "--model", model, "--out", str(tmp_path / "p"), "--data-dir", value])
        assert message in capsys.readouterr().err
    assert main(["profile", "--model", model, "--out", str(tmp_path / "p"), "--data-dir", f"medlama={tmp_path / 'none'}"]) == 2
    assert f"--data-dir medlama={tmp_path / 'none'} does not exist" in capsys.readouterr().err
    assert main(["profile", "--model", model, "--out", str(tmp_path / "p"), "--data-dir", f"mst={tmp_path}"]) == 2
    assert "mst is generated" in capsys.readouterr().err
    assert (
        main(
            [
                "profile",
                "--model",
                model,
                "--out",
                str(tmp_path / "p"),
                "--benchmarks",
                "mst",
                "--data-dir",
                f"medlama={tmp_path}",
            ]
        )
        == 2
    )
    assert "not among --benchmarks" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["profile", "--model", model, "--out", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err
    assert fake_run == [] and not (tmp_path / "p").exists()


def test_a_built_folder_is_used_as_it_is(tmp_path, model_folders, fake_run, synthetic_medlama_hub):
    out = tmp_path / "profile"
    args = ["profile", "--model", model_folders["encoder"], "--out", str(out), "--benchmarks", "medlama"]
    assert main([*args, "--data-dir", f"medlama={synthetic_medlama_hub}"]) == 0
    assert {r.dataset for r in fake_run} == {str(synthetic_medlama_hub)}
    data = json.loads((out / "profile.json").read_text())["data"]["medlama"]
    assert data["sample"] is False and "medprobe build" in data["source"]
    assert not (out / "datasets").exists()


def test_a_release_folder_is_built_first(tmp_path, model_folders, fake_run, monkeypatch):
    import medprobe.building.build
    from synthetic_medlama import BUILD_PARAMS, write_release

    real_build = medprobe.building.build.build
    # the synthetic release holds 3 rows per relation: its build needs the row-count parameter
    monkeypatch.setattr(
        medprobe.building.build, "build", lambda *a, params, **kw: real_build(*a, params={**params, **BUILD_PARAMS}, **kw)
    )
    release = write_release(tmp_path / "release")
    out = tmp_path / "profile"
    profile = run_profile(
        ProfileOptions(model=model_folders["encoder"], out=str(out), benchmarks=("medlama",), data_dirs={"medlama": str(release)})
    )
    assert {r.dataset for r in fake_run} == {
        str(tmp_path / f".profile.medprobe-tmp-{os.getpid()}" / "out" / "datasets" / "medlama")
    }
    assert {run["request"]["dataset"] for run in profile.runs} == {str(out / "datasets" / "medlama")}  # built there, swapped in
    assert [(r.config, r.task) for r in fake_run] == [("full", "medlama"), ("hard", "medlama")]
    data = json.loads((out / "profile.json").read_text())["data"]["medlama"]
    assert data["source"] == "built from a release folder (--data-dir)" and str(release) not in (out / "profile.md").read_text()
    assert data["dataset"] == str(out / "datasets" / "medlama") and load_dataset(data["dataset"], "hard", split="test").num_rows


def test_a_folder_in_the_way_that_is_not_a_medprobe_build_is_refused_and_kept(
    tmp_path, model_folders, fake_run, capsys, monkeypatch
):
    import medprobe.building.build
    from synthetic_medlama import BUILD_PARAMS, write_release

    real_build = medprobe.building.build.build  # the synthetic release holds 3 rows per relation
    monkeypatch.setattr(
        medprobe.building.build, "build", lambda *a, params, **kw: real_build(*a, params={**params, **BUILD_PARAMS}, **kw)
    )
    release = write_release(tmp_path / "release")
    out = tmp_path / "profile"
    foreign = out / "datasets" / "medlama"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    argv = [
        "profile",
        "--model",
        model_folders["encoder"],
        "--out",
        str(out),
        "--benchmarks",
        "medlama",
        "--data-dir",
        f"medlama={release}",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        f"{out} already holds 1 file(s): datasets/medlama/notes.txt, and no profile.json; a profile would replace it: pass "
        "--overwrite, or choose another --out"
        in err
        and len(err.splitlines()) == 1
    )
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"] and (foreign / "notes.txt").read_text() == "mine"
    assert fake_run == [] and sorted(p.name for p in tmp_path.iterdir()) == ["profile", "release"]
    assert main([*argv, "--overwrite"]) == 0  # the --overwrite the message names is an option of profile
    assert not foreign.joinpath("notes.txt").exists() and len(fake_run) == 2


# --- publish results DIR ---------------------------------------------------------------------------------


PROBED_WEIGHTS = b"weights of the profiled model"


def probed_identity(weights: bytes = PROBED_WEIGHTS) -> dict:
    """The model_identity a run records for a local folder holding one model.safetensors of these bytes."""
    from medprobe.digests import combined_digest

    files = {"model.safetensors": {"size": len(weights), "sha256": hashlib.sha256(weights).hexdigest()}}
    return {"name": "/home/someone/m", "path": "/home/someone/m", "weights_sha256": combined_digest(files), "weights": files}


PROFILE_DATA = {  # the data files of the made-up profile's datasets, as their Hub cards state them
    "medlama": {"full": {"full/test-00000-of-00001-abc.parquet": "d" * 64}},
    "mst": {"comparison": {"comparison/test-00000-of-00001-abc.parquet": "d" * 64}},
}


def profile_fingerprint(task: str) -> dict:
    """The data fingerprint of a made-up profile run of `task`: the files PROFILE_DATA names."""
    from medprobe.provenance import files_digest

    files = {
        f"{config}/test/{Path(path).name}": digest
        for config, listed in PROFILE_DATA[task].items()
        for path, digest in listed.items()
    }
    return {"sha256": files_digest(files), "files": files}


def written_run(path: Path, task: str, config: str | None, prober: str, weights_hash: bool, **fields) -> dict:
    """A results JSON and its outcomes of a made-up profile run (tests/synthetic_runs.py: every number is the
    outcomes'), as profile.json records it. MedLAMA: 40 queries, acc@1 2.5% and acc@10 25% (`quick`: 20 queries, the
    first 10 of each relation, acc@10 25%); MST: 10 items in each of two tasks, accuracy 60% (30% with random weights,
    `scratch`)."""
    scratch, quick = fields.pop("scratch", False), fields.pop("quick", False)
    if task == "medlama":
        size, top_10 = (10, (3, 2)) if quick else (20, (5, 5))  # acc@10 25% either way, over 20 or 40 queries
        relations = ("may_treat", "may_prevent")
        ids, groups, ranks = medlama_hits(
            dict.fromkeys(relations, size), dict(zip(relations, (1, 0))), dict(zip(relations, top_10))
        )
        columns, options = {"rank": ranks}, {"chance": {"acc@10": {"value": 0.05, "method": "made-up chance"}}}
    else:
        ids = [f"{group}/{row}" for group in ("comparison", "sorting") for row in range(10)]
        groups, right = [item.split("/")[0] for item in ids], 3 if scratch else 6
        labels = [0] * len(ids)
        columns = {
            "label": labels,
            "prediction": [[0] if int(i.split("/")[1]) < right else [1] for i in ids],
            "choices": [2] * len(ids),
        }
        options = {"settings": {"seeds": [0], "train_split": "train"}, "seed_spread": True}
        options["chance"] = {"accuracy": {"value": 0.375, "method": "made-up chance"}}
    identity = probed_identity() if weights_hash else {"name": "m"}
    dataset = str(path.parent.parent / "datasets" / task)
    write_run(
        path,
        ids,
        groups,
        columns,
        task=task,
        config=config,
        prober=prober,
        dataset=dataset,
        model="m",
        model_identity=identity,
        source={"version": "0.2.0", "commit": "b" * 40, "dirty": False},
        command=f"medprobe probe --prober {prober} --task {task} --dataset {dataset} --model /home/someone/m",
        **options,
        **{"data_fingerprint": profile_fingerprint(task), **fields},
    )
    return json.loads(path.read_text())


def written_profile(
    folder: Path,
    sample_medlama: bool = False,
    quick: bool = False,
    weights_hash: bool = True,
    medlama_fingerprint: dict | None = None,
) -> Path:
    """A profile folder of made-up runs: medlama full (built), mst and its scratch floor, a failed context-variance run;
    `quick`: a --quick profile (MedLAMA probed with --per-relation 10, MST generated small); `weights_hash=False`: runs
    that recorded no weights hash of their model; `medlama_fingerprint`: the data the MedLAMA run read."""
    runs = folder / "runs"
    subset = {"subset_options": {"per_relation": 10}, "subset_of": {"probed": 20, "total": 19000, "unit": "queries"}}
    records = {
        "medlama-full-contrastive": written_run(
            runs / "medlama-full-contrastive.json",
            "medlama",
            "full",
            "contrastive",
            weights_hash,
            **(dict(subset, quick=True) if quick else {}),
            **({"data_fingerprint": medlama_fingerprint} if medlama_fingerprint else {}),
        ),
        "mst-mlm-head": written_run(runs / "mst-mlm-head.json", "mst", None, "mlm-head", weights_hash),
        "mst-mlm-head-scratch": written_run(
            runs / "mst-mlm-head-scratch.json", "mst", None, "mlm-head", weights_hash, scratch=True
        ),
    }

    def run(label, benchmark, config, prober, floor_of=None):
        entry = {"label": label, "benchmark": benchmark, "config": config, "prober": prober, "floor_of": floor_of}
        record = records.get(label)
        entry["record"] = record
        if record:  # the run files, with their sha256 in profile.json as `medprobe profile` records them
            path = runs / f"{label}.json"
            entry["results"], entry["files"] = str(path), {f"runs/{p.name}": sha256_file(p) for p in (path, outcomes_path(path))}
        return entry

    settings = {"quick": quick, "quick_settings": quick_settings() if quick else None}
    profile = Profile(
        model="m", kind="encoder", kind_reason="architectures BertModel", settings=settings, figure_note="no figure"
    )
    profile.data = {
        "medlama": {
            "benchmark": "medlama",
            "dataset": records["medlama-full-contrastive"]["dataset"],
            "source": "sample" if sample_medlama else "built",
            "note": "",
            "sample": sample_medlama,
        },
        "mst": {
            "benchmark": "mst",
            "dataset": records["mst-mlm-head"]["dataset"],
            "source": "generated",
            "note": "",
            "sample": False,
        },
        "context_variance": {"benchmark": "context_variance", "dataset": "x", "source": "built", "note": "", "sample": False},
    }
    profile.runs = [
        run("medlama-full-contrastive", "medlama", "full", "contrastive"),
        run("mst-mlm-head", "mst", None, "mlm-head"),
        run("mst-mlm-head-scratch", "mst", None, "mlm-head", floor_of="mst-mlm-head"),
        run("context_variance-real-target-contrastive", "context_variance", "real-target", "contrastive"),
    ]
    profile.headline = [
        {
            "benchmark": "medlama",
            "config": "full",
            "prober": "contrastive",
            "run": "medlama-full-contrastive",
            "metric": "acc@10",
            "value": 0.25,
            "chance": 0.05,
            "chance_source": "k/N",
            "floor": None,
            "floor_source": "none",
        }
    ]
    write_profile(profile, folder)
    return folder


@pytest.fixture
def hub(monkeypatch, tmp_path):
    from hub_mock import dataset_card, serving

    with serving(monkeypatch, tmp_path, "hf_TestTokenForProfilePublishing0123") as fake:
        for task, configs in PROFILE_DATA.items():  # the datasets the profile's runs are published under
            fake.add_repo("dataset", f"my-lab/{task}", files={"README.md": dataset_card(configs, benchmark=task)})
        yield fake


CARD = "---\nlicense: apache-2.0\n---\n\n# bert\n\nText the owner wrote.\n"


def test_publish_a_profile_folder(tmp_path, hub, capsys):
    folder = written_profile(tmp_path / "profile")
    repo = hub.add_repo("model", "my-lab/bert", files={"README.md": CARD.encode(), "model.safetensors": PROBED_WEIGHTS})
    ids = ["--dataset-id", "medlama=my-lab/medlama", "--dataset-id", "mst=my-lab/mst"]
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids]) == 0
    out = capsys.readouterr().out
    assert (
        "mst-mlm-head-scratch: left out, a floor" in out
        and "context_variance-real-target-contrastive: left out, the run failed" in out
    )
    card = ModelCard(repo.files["README.md"].decode())
    results = card.data.eval_results
    assert {(r.dataset_type, r.metric_type): r.metric_value for r in results} == pytest.approx(
        {
            ("my-lab/medlama", "acc@1"): 0.025,
            ("my-lab/medlama", "macro_acc@1"): 0.025,
            ("my-lab/medlama", "acc@10"): 0.25,
            ("my-lab/medlama", "macro_acc@10"): 0.25,
            ("my-lab/mst", "accuracy"): 0.6,
            ("my-lab/mst", "accuracy_std"): 0.0,
        }
    )
    assert card.data.datasets == ["my-lab/medlama", "my-lab/mst"] and card.data.license == "apache-2.0"
    assert "Text the owner wrote." in card.text and "## Knowledge profile: m" in card.text
    assert "| medlama | full | contrastive | acc@10 | 25.00 | — | — | 5.00 | — |" in card.text
    # published again: the section is replaced, not added twice; the eval results are updated, not repeated
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids]) == 0
    card = ModelCard(repo.files["README.md"].decode())
    assert card.text.count("## Knowledge profile") == 1 and len(card.data.eval_results) == 6


def test_publish_a_profile_needs_a_hub_id_per_local_benchmark(tmp_path, hub, capsys):
    folder = written_profile(tmp_path / "profile")
    hub.add_repo("model", "my-lab/bert")
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", "--dataset-id", "medlama=my-lab/medlama"]) == 2
    assert "--dataset-id mst=<org>/<name>" in capsys.readouterr().err and hub.log == []
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", "--dataset-id", "my-lab/medlama"]) == 2
    assert "name each" in capsys.readouterr().err


def test_publish_a_profile_leaves_out_runs_on_the_shipped_sample(tmp_path, hub, capsys):
    folder = written_profile(tmp_path / "profile", sample_medlama=True)
    hub.add_repo("model", "my-lab/bert")
    assert (
        main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", "--dataset-id", "mst=my-lab/mst", "--dry-run"])
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "medlama-full-contrastive: left out, its data is a shipped sample" in out and "type: my-lab/mst" in out and hub.log == []
    )


def test_publish_a_quick_profile_is_refused_unless_allowed_and_then_labelled_a_subset(tmp_path, hub, capsys):
    folder = written_profile(tmp_path / "profile", quick=True)
    repo = hub.add_repo("model", "my-lab/bert", files={"README.md": CARD.encode(), "model.safetensors": PROBED_WEIGHTS})
    ids = ["--dataset-id", "medlama=my-lab/medlama", "--dataset-id", "mst=my-lab/mst"]
    for dry_run in ([], ["--dry-run"]):
        assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids, *dry_run]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{folder / 'profile.json'} run medlama-full-contrastive probed a subset" in err
        assert "profile --quick: first 10 queries per relation, 20 of 19,000 queries" in err and "--allow-subset" in err
    assert repo.commits == []
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids, "--allow-subset"]) == 0
    card = ModelCard(repo.files["README.md"].decode())
    names = {result.dataset_type: result.dataset_name for result in card.data.eval_results}
    assert names == {
        "my-lab/medlama": "MedLAMA (full; subset: profile --quick: first 10 queries per relation, 20 of 19,000 queries)",
        "my-lab/mst": "MST (measuring-skill tests) (subset: profile --quick: generated with train_size=200, validation_size=20, test_size=100)",
    }
    configs = {result.dataset_type: result.dataset_config for result in card.data.eval_results}
    assert configs == {
        "my-lab/medlama": "full/subset:profile-quick,per_relation=10",
        "my-lab/mst": "subset:profile-quick,train_size=200,validation_size=20,test_size=100",
    }


def test_publish_a_profile_checks_the_model_it_probed(tmp_path, hub, capsys):
    folder = written_profile(tmp_path / "profile")
    ids = ["--dataset-id", "medlama=my-lab/medlama", "--dataset-id", "mst=my-lab/mst"]
    repo = hub.add_repo("model", "my-lab/bert", files={"model.safetensors": b"weights of another model"})
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'profile.json'} run medlama-full-contrastive: --model-repo my-lab/bert does not hold the weights" in err
    assert "--model-mismatch-ok" in err and repo.commits == []
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids, "--model-mismatch-ok"]) == 0
    # a profile whose runs recorded no weights hash cannot be checked, even in a dry run
    folder = written_profile(tmp_path / "no-weights-hash", weights_hash=False)
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids, "--dry-run"]) == 2
    assert "records no weights hash of its model" in capsys.readouterr().err


def test_a_published_profile_card_gives_each_run_n_interval_fingerprint_version_and_command(tmp_path, hub, capsys):
    folder = written_profile(tmp_path / "profile")
    repo = hub.add_repo("model", "my-lab/bert", files={"README.md": CARD.encode(), "model.safetensors": PROBED_WEIGHTS})
    ids = ["--dataset-id", "medlama=my-lab/medlama", "--dataset-id", "mst=my-lab/mst"]
    assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids]) == 0
    text = ModelCard(repo.files["README.md"].decode()).text
    section = text[text.index("<!-- medprobe knowledge profile: start") : text.index("<!-- medprobe knowledge profile: end")]
    assert "### Published runs" in section and section.count("<!-- medprobe run: ") == 2  # medlama and mst, not the floor
    interval = json.loads((folder / "runs/medlama-full-contrastive.json").read_text())["intervals"]["acc@10"]
    low, high = 100 * interval["low"], 100 * interval["high"]
    assert "#### MedLAMA (full) · split test · prober contrastive" in section and low < 25 < high
    assert f"| acc@10 | 25.00 | {low:.2f}–{high:.2f} | 40 queries |" in section
    assert f"- data: my-lab/mst, sha256 `{profile_fingerprint('mst')['sha256'][:12]}` over 1 data file(s)" in section
    assert "measured with medprobe 0.2.0 (commit `bbbbbbbbbbbb`)" in section
    assert "- repeat: `medprobe probe --prober mlm-head --task mst --dataset my-lab/mst --model my-lab/bert`" in section
    assert str(tmp_path) not in text and "/home/someone" not in text  # no local path in the card


def test_publish_refuses_a_profile_whose_files_are_not_the_ones_it_recorded(tmp_path, hub, capsys):
    """Measured before: a killed --seed 5 profile left the old profile.json over seed-5 run files, and publish
    planned the old values without a word. Now profile.json records each file's sha256 and publish checks them."""
    hub.add_repo("model", "my-lab/bert")
    ids = ["--dataset-id", "medlama=my-lab/medlama", "--dataset-id", "mst=my-lab/mst"]

    def publish(folder: Path) -> str:
        assert main(["publish", "results", str(folder), "--model-repo", "my-lab/bert", *ids, "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and hub.log == []
        return err

    folder = written_profile(tmp_path / "other-seed")
    other = load_record_file(folder / "runs/mst-mlm-head.json")
    other.metrics["accuracy"] = 0.508  # the run file of another profile's run (as the killed seed-5 profile left it)
    other.save(folder / "runs/mst-mlm-head.json")
    assert f"{folder / 'runs/mst-mlm-head.json'} is not the file profile.json recorded" in publish(folder)

    folder = written_profile(tmp_path / "missing")
    (folder / "runs/mst-mlm-head-scratch.json").unlink()
    assert f"{folder / 'runs/mst-mlm-head-scratch.json'}, which profile.json records, is missing" in publish(folder)

    folder = written_profile(tmp_path / "table")
    (folder / "profile.md").write_text("my table\n")
    assert f"{folder / 'profile.md'} is not the file profile.json recorded" in publish(folder)

    folder = written_profile(tmp_path / "edited")  # the value edited in profile.json: its run file says otherwise
    profile = json.loads((folder / "profile.json").read_text())
    profile["runs"][1]["record"]["metrics"]["accuracy"] = 0.51
    (folder / "profile.json").write_text(json.dumps(profile))
    assert "runs/mst-mlm-head.json and the record of run mst-mlm-head in profile.json disagree" in publish(folder)

    folder = written_profile(tmp_path / "older")  # written before profiles recorded their files
    profile = json.loads((folder / "profile.json").read_text())
    del profile["files"]
    (folder / "profile.json").write_text(json.dumps(profile))
    assert "records no sha256 of its files" in publish(folder)


def test_publish_a_folder_that_is_no_profile(tmp_path, hub, capsys):
    assert main(["publish", "results", str(tmp_path), "--model-repo", "my-lab/bert"]) == 2
    assert "without profile.json" in capsys.readouterr().err


def test_probe_argv_is_recorded_as_a_shell_command(tmp_path, model_folders, fake_run, generated_data):
    out = tmp_path / "p"
    run_profile(ProfileOptions(model=model_folders["encoder"], out=str(out), benchmarks=("mst",)))
    command = json.loads((out / "profile.json").read_text())["runs"][1]["command"]
    assert shlex.split(command)[:5] == ["medprobe", "probe", "--prober", "mlm-head", "--task"] and "--scratch" in command


# --- a real profile on tiny data: the runs are `medprobe probe` runs ------------------------------------


def test_a_profile_on_tiny_data_matches_medprobe_probe_byte_for_byte(tmp_path, synthetic_medlama_hub):
    model = str(save_tiny_bert(tmp_path / "tiny-encoder"))
    out = tmp_path / "profile"
    argv = [
        "profile",
        "--model",
        model,
        "--out",
        str(out),
        "--quick",
        "--device",
        "cpu",
        "--benchmarks",
        "medlama",
        "context_variance",
        "disknE",
        "--data-dir",
        f"medlama={synthetic_medlama_hub}",
    ]
    assert main(argv) == 0
    profile = json.loads((out / "profile.json").read_text())
    assert [(row["benchmark"], row["config"], row["metric"]) for row in profile["headline"]] == [
        ("medlama", "full", "acc@10"),
        ("medlama", "hard", "acc@10"),
        ("context_variance", "real-target", "understand"),
    ]
    assert all(isinstance(row["value"], float) for row in profile["headline"])
    assert [(item["benchmark"], item["reason"][:7]) for item in profile["skipped"]] == [("disknE", "no data")]
    assert "| disknE |" in (out / "profile.md").read_text()
    for run in profile["runs"]:
        assert run["record"]["benchmark"] == run["benchmark"] and Path(run["results"]).is_file()
        argv = shlex.split(run["command"])[1:]
        again = {"--out": str(tmp_path / "again.json"), "--predictions": str(tmp_path / "again.jsonl")}
        argv = [again.get(previous, word) for previous, word in zip(["", *argv], argv)]
        assert main(argv) == 0
        assert (tmp_path / "again.jsonl").read_bytes() == Path(run["predictions"]).read_bytes()
        assert load_record_file(tmp_path / "again.json").metrics == run["record"]["metrics"]


def save_tiny_gpt2(folder: Path) -> str:
    from tiny_models import byte_bpe_tokenizer, tiny_random_gpt2

    tokenizer = byte_bpe_tokenizer()
    tiny_random_gpt2(tokenizer, n_positions=1024).save_pretrained(folder)  # byte-level pieces: long texts
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_a_causal_lm_profile_runs_causal_lm_and_skips_mst(tmp_path, synthetic_medlama_hub):
    # (context variance with causal-lm is the same run loop; tests/test_rank_change.py covers its scoring)
    out = tmp_path / "profile"
    argv = [
        "profile",
        "--model",
        save_tiny_gpt2(tmp_path / "gpt2"),
        "--out",
        str(out),
        "--quick",
        "--device",
        "cpu",
        "--benchmarks",
        "medlama",
        "mst",
        "--data-dir",
        f"medlama={synthetic_medlama_hub}",
    ]
    assert main(argv) == 0
    profile = json.loads((out / "profile.json").read_text())
    assert profile["kind"] == "causal-lm"
    assert [(run["label"], run["record"]["prober"]) for run in profile["runs"]] == [
        ("medlama-full-causal-lm", "causal-lm"),
        ("medlama-hard-causal-lm", "causal-lm"),
    ]
    assert {item["benchmark"]: item["reason"] for item in profile["skipped"]}["mst"] == MST_CAUSAL_REASON


def test_an_encoder_profile_of_mst_has_chance_and_the_scratch_floor(tmp_path):
    # smaller than --quick, for a fast test: 40 train / 20 test rows per task, 2 epochs
    mst = task_entry("mst")
    quick = {"task": {"seeds": 1}, "prober": {"epochs": 2}, "build": {"train_size": 40, "validation_size": 2, "test_size": 20}}
    smaller = dataclasses.replace(mst, profile=dataclasses.replace(mst.profile, quick=quick))
    out = tmp_path / "profile"
    argv = [
        "profile",
        "--model",
        str(save_tiny_bert(tmp_path / "tiny-encoder")),
        "--out",
        str(out),
        "--quick",
        "--device",
        "cpu",
        "--benchmarks",
        "mst",
    ]
    with using(registry().with_entries(smaller)):
        assert main(argv) == 0
    [row] = json.loads((out / "profile.json").read_text())["headline"]
    assert row["metric"] == "accuracy" and 0 <= row["value"] <= 1
    assert 0.25 < row["chance"] < 0.5 and 0 <= row["floor"] <= 1  # chance: the mean 1/|choices| of the five tasks
    assert load_record_file(out / "runs" / "mst-mlm-head-scratch.json").settings.get("scratch") is True


def test_disknE_runs_when_its_release_folder_is_given(tmp_path, model_folders, fake_run, synthetic_disknE):
    # the run itself is stood in for: fine-tuning per disease takes minutes (tests/test_pair_classifier.py runs it)
    out = tmp_path / "profile"
    argv = [
        "profile",
        "--model",
        model_folders["encoder"],
        "--out",
        str(out),
        "--quick",
        "--benchmarks",
        "disknE",
        "--data-dir",
        f"disknE={synthetic_disknE.data_dir}",
    ]
    assert main(argv) == 0
    [request] = fake_run
    assert (request.task, request.prober, request.config) == ("disknE", "pair-classifier", "medical_similar")
    assert request.dataset.endswith("/out/datasets/disknE") and request.task_options == {"diseases": 2}
    assert request.prober_options == {"epochs": 1}
    profile = json.loads((out / "profile.json").read_text())
    assert profile["skipped"] == [] and profile["data"]["disknE"]["source"] == "built from a release folder (--data-dir)"
    assert profile["runs"][0]["request"]["dataset"] == str(out / "datasets" / "disknE")
    assert load_dataset(str(out / "datasets" / "disknE"), "medical_similar", split="test").num_rows > 0


def test_a_config_missing_from_a_built_folder_is_skipped_with_its_reason(tmp_path, model_folders, fake_run):
    from medprobe.building.build import build
    from synthetic_medlama import BUILD_PARAMS, write_release

    folder = tmp_path / "medlama-full-only"
    build("medlama", folder, data_dir=str(write_release(tmp_path / "release")), configs=["full"], params=BUILD_PARAMS)
    out = tmp_path / "profile"
    argv = [
        "profile",
        "--model",
        model_folders["encoder"],
        "--out",
        str(out),
        "--benchmarks",
        "medlama",
        "--data-dir",
        f"medlama={folder}",
    ]
    assert main(argv) == 0
    assert [(r.config, r.prober) for r in fake_run] == [("full", "contrastive")]
    [skipped] = json.loads((out / "profile.json").read_text())["skipped"]
    assert (skipped["config"], skipped["reason"]) == (
        "hard",
        "no data: the folder built by `medprobe build` has no hard config (it has full)",
    )


def test_the_medlama_sample_is_the_demo_s():
    from medprobe.demo import SAMPLE_DATASET
    from medprobe.profiling.plan import sample_folder

    sample = sample_folder(task_entry("medlama").profile)
    assert sample == SAMPLE_DATASET and (sample / "README.md").is_file()


def test_a_run_written_in_a_staging_folder_is_named_as_in_out(tmp_path, capsys):
    """The profile's runs are written into `.OUT.medprobe-tmp-PID/out/`, gone when it ends: the lines say OUT."""
    from medprobe.records.write import save_run

    staged = tmp_path / ".profile.medprobe-tmp-14439" / "out" / "runs" / "mst.json"
    record = fake_record(
        argparse.Namespace(
            task="mst", dataset="d", config=None, split="test", prober="mlm-head", model="m", seed=1, prober_options={}
        )
    )
    save_run(record, staged)
    assert capsys.readouterr().out == f"wrote {tmp_path}/profile/runs/mst.json\n"
