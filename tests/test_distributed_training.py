"""Independent trainings split over 2 CPU processes (torchrun, gloo) give the 1-process results.

DisKnE's (seed, disease) trainings and MST's (seed, task) head fits are split as whole jobs, each
trained by a single-process Trainer (`medprobe.distributed.local_training`), and gathered back in
order. The launched runs here are compared with the same command run as one plain process, with
the same environment (one torch thread each), on tiny random models: plumbing, not knowledge.
"""

from __future__ import annotations

import json
import os
import string
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from launch import REPO_ROOT, launch, launch_cli

WORDS = ["patient", "was", "admitted", "for", "evaluation", "history", "of", "noted", "the", "to", "have", "disease"]


def environment() -> dict[str, str]:
    """What launch_cli gives each launched process, for the plain 1-process run."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`medprobe ARGS` as one plain process (no launch variables)."""
    env = {name: value for name, value in environment().items() if name not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    result = subprocess.run(
        [sys.executable, "-m", "medprobe.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"medprobe failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-6000:]}"
    return result


def one_and_two_processes(args: list[str], tmp_path: Path) -> tuple[dict, dict, subprocess.CompletedProcess]:
    """The results record of `args` run as 1 process and as 2 launched processes, and the launch's output."""
    run_cli([*args, "--out", str(tmp_path / "one.json")], tmp_path)
    launched = launch_cli([*args, "--out", str(tmp_path / "two.json")], tmp_path)
    return json.loads((tmp_path / "one.json").read_text()), json.loads((tmp_path / "two.json").read_text()), launched


@pytest.fixture(scope="module")
def tiny_pair_bert(tmp_path_factory) -> str:
    """A 1-layer 16-wide BERT encoder (no classification head, like MiniLM) with a vocabulary for the synthetic DisKnE."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_pair_bert")
    letters = string.ascii_lowercase + string.digits
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, *letters, *(f"##{c}" for c in letters), *".,;:()-"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=256,
    )
    BertModel(config).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def tiny_mlm_bert(tmp_path_factory) -> str:
    from test_mlm_head import save_tiny_bert

    return save_tiny_bert(tmp_path_factory.mktemp("tiny_mlm_bert"), with_head=True)


@pytest.fixture(scope="module")
def small_mst(tmp_path_factory) -> Path:
    from medprobe.building.build import build

    out = tmp_path_factory.mktemp("mst_small")
    build("mst", out, configs=["comparison", "sorting"], params={"train_size": 30, "validation_size": 3, "test_size": 20})
    return out


def settings(record: dict) -> dict:
    """The run's settings less the number of processes (which a launched run records)."""
    return {name: value for name, value in record["settings"].items() if name != "processes"}


FAST_PAIR_TRAINING = ["--max-length", "32", "--train-batch-size", "32"]  # the tiny model needs no more to test plumbing


def without_seconds(per_group: dict) -> dict:
    """Per-disease records less their wall time (which differs between any two runs)."""
    return {cui: {k: v for k, v in values.items() if k != "seconds"} for cui, values in per_group.items()}


# One launch (and one plain process) serves the three DisKnE and local_training tests below: each process of the
# script checks local_training and gather, then trains the DisKnE runs of a task object, then runs the CLI as the
# `medprobe` program (`python -m medprobe.cli`), which ends the process. Each launch starts three Python processes
# that import torch and transformers (about 20 CPU seconds on 2 cores): one launch rather than three.
DISKNE_SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from transformers import TrainingArguments
    from medprobe import distributed
    from medprobe.cli import main
    from medprobe.lm.pair_classifier import PairClassifierProbe
    from medprobe.tasks.disknE import DisKnETask

    dataset, model, out, *cli = sys.argv[1:]
    out = Path(out)

    # local_training: single-process Trainers inside it, the launch's gather after it
    report = {"launched": distributed.launched(), "processes": distributed.num_processes()}
    outside = TrainingArguments(output_dir=str(out / "trainer"), use_cpu=True, report_to="none")
    report["outside"] = str(outside.parallel_mode)
    with distributed.local_training():
        inside = TrainingArguments(output_dir=str(out / "trainer"), use_cpu=True, report_to="none")
        report["inside"] = str(inside.parallel_mode)
        report["inside_world_size"] = inside.world_size
        report["inside_launched"] = distributed.launched()
    report["gathered"] = distributed.gather([distributed.process_index()])
    report["launched_after"] = distributed.launched()
    if distributed.is_main_process():
        (out / "local_training.json").write_text(json.dumps(report))

    # the runs a task object trains, gathered back on every process
    task = DisKnETask(diseases=2, seeds=2)
    data = task.load(dataset, "terminological_similar", "test")
    prober = PairClassifierProbe(model, epochs=1, max_length=32, train_batch_size=32, device="cpu")
    runs = task.predict(prober, data, 11).runs
    summary = [[run.cui, run.seed, run.predictions, run.references, run.best_validation_loss, run.epochs] for run in runs]
    # a file per process: lines that two processes print to one pipe can interleave
    (out / f"runs_{distributed.process_index()}.json").write_text(json.dumps(summary))

    # the command line, as the `medprobe` program runs it (it ends this process)
    sys.argv = ["medprobe", *cli]
    main()
""")


@pytest.fixture(scope="module")
def disknE_launch(built_disknE, tiny_pair_bert, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """DISKNE_SCRIPT run as one plain process (into one/) and as 2 launched processes (into two/); the folder and
    the launch's output. The CLI part: 2 diseases x 1 seed, so process 0 trains the first disease, process 1 the
    second."""
    folder = tmp_path_factory.mktemp("disknE_launch")
    script = folder / "disknE.py"
    script.write_text(DISKNE_SCRIPT)
    cli = ["probe", "--dataset", str(built_disknE), "--config", "terminological_similar", "--prober", "pair-classifier",
           "--model", tiny_pair_bert, "--diseases", "2", "--epochs", "1", "--seed", "11", "--device", "cpu",
           *FAST_PAIR_TRAINING]  # fmt: skip
    for name in ("one", "two"):
        (folder / name).mkdir()
    single = subprocess.run(
        [
            sys.executable,
            str(script),
            str(built_disknE),
            tiny_pair_bert,
            str(folder / "one"),
            *cli,
            "--out",
            str(folder / "one.json"),
        ],
        cwd=folder,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert single.returncode == 0, f"{single.stdout[-4000:]}\n{single.stderr[-6000:]}"
    launched = launch(
        [str(script), str(built_disknE), tiny_pair_bert, str(folder / "two"), *cli, "--out", str(folder / "two.json")], folder
    )
    return folder, launched


def test_disknE_on_two_processes_writes_the_one_process_record_and_prints_one_table_plumbing_tiny_random_bert(disknE_launch):
    folder, launched = disknE_launch
    one, two = (json.loads((folder / f"{name}.json").read_text()) for name in ("one", "two"))
    assert len(one["per_group"]) == 2 and one["counts"]["trainings"] == 2
    assert without_seconds(two["per_group"]) == without_seconds(one["per_group"])
    assert two["metrics"] == one["metrics"] and two["counts"] == one["counts"] and settings(two) == settings(one)
    assert launched.stdout.count("macro F1") == 1  # the table is printed once, by the main process
    assert launched.stderr.count("process 1 of 2's share") >= 1 and "fine-tuning per disease:" not in launched.stderr


def test_disknE_runs_gathered_from_two_processes_equal_the_one_process_runs_on_every_process_plumbing_tiny_random_bert(
    disknE_launch,
):
    # 2 seeds x 2 diseases = 4 trainings split 2 / 2; the best validation loss of each depends on every
    # weight, so equal losses mean each training is the one the single process ran
    folder, _ = disknE_launch
    expected = json.loads((folder / "one" / "runs_0.json").read_text())
    per_process = {rank: json.loads((folder / "two" / f"runs_{rank}.json").read_text()) for rank in (0, 1)}
    assert [(cui, seed) for cui, seed, *_ in expected] == [(c, s) for s in (11, 12) for c in {r[0]: 0 for r in expected}]
    assert len({loss for *_, loss, _ in expected}) == 4  # the seeds train differently: a swap would show
    assert per_process == {0: expected, 1: expected}


def test_local_training_makes_single_process_trainers_and_gather_works_after_it(disknE_launch):
    folder, _ = disknE_launch
    report = json.loads((folder / "two" / "local_training.json").read_text())  # written by the main process
    assert report["launched"] and report["processes"] == 2
    assert report["outside"] == "ParallelMode.DISTRIBUTED"
    assert report["inside"] == "ParallelMode.NOT_PARALLEL" and report["inside_world_size"] == 1 and not report["inside_launched"]
    assert report["gathered"] == [0, 1] and report["launched_after"]


def test_mst_heads_on_two_processes_give_the_one_process_accuracies_plumbing_tiny_random_bert(small_mst, tiny_mlm_bert, tmp_path):
    args = [
        "probe",
        "--dataset",
        str(small_mst),
        "--prober",
        "mlm-head",
        "--model",
        tiny_mlm_bert,
        "--seeds",
        "2",
        "--seed",
        "4",
        "--epochs",
        "2",
        "--device",
        "cpu",
    ]
    one, two, _ = one_and_two_processes(args, tmp_path)
    assert [len(group["accuracy_per_seed"]) for group in one["per_group"].values()] == [2, 2]
    assert two["per_group"] == one["per_group"] and two["metrics"] == one["metrics"] and settings(two) == settings(one)


def test_scratch_mst_heads_split_mid_seed_give_the_one_process_accuracies_plumbing_tiny_random_bert(
    small_mst, tiny_mlm_bert, tmp_path
):
    # 3 seeds x 2 tasks = 6 fits split 3 / 3: process 1 starts with seed 5's second task, so a fit
    # must not depend on what ran before it (the scratch encoder of a seed is drawn from the seed alone)
    args = [
        "probe",
        "--dataset",
        str(small_mst),
        "--prober",
        "mlm-head",
        "--model",
        tiny_mlm_bert,
        "--scratch",
        "--seeds",
        "3",
        "--seed",
        "4",
        "--epochs",
        "1",
        "--device",
        "cpu",
    ]
    one, two, _ = one_and_two_processes(args, tmp_path)
    assert [len(group["accuracy_per_seed"]) for group in one["per_group"].values()] == [3, 3]
    assert two["per_group"] == one["per_group"] and two["metrics"] == one["metrics"]


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> Path:
    from tiny_bert import save_tiny_bert

    return save_tiny_bert(tmp_path_factory.mktemp("tiny_encoder"))


@pytest.fixture(scope="module")
def rewiring_corpus(tmp_path_factory) -> Path:
    from tiny_bert import toy_corpus

    path = tmp_path_factory.mktemp("corpus") / "sentences.txt"
    path.write_text("\n".join(toy_corpus(40)) + "\n", encoding="utf-8")
    return path


def test_rewiring_on_two_processes_saves_once_the_model_every_process_probed_with_plumbing_tiny_random_bert(
    synthetic_medlama_hub, tiny_encoder, rewiring_corpus, tmp_path
):
    # one DistributedDataParallel training: --rewire-batch-size 8 is the batch of a step, 4 pairs per process
    saved = tmp_path / "rewired"
    args = [
        "probe",
        "--dataset",
        str(synthetic_medlama_hub),
        "--prober",
        "contrastive",
        "--model",
        str(tiny_encoder),
        "--rewire-corpus",
        str(rewiring_corpus),
        "--rewire-steps",
        "3",
        "--rewire-batch-size",
        "8",
        "--rewire-learning-rate",
        "1e-2",
        "--save-rewired",
        str(saved),
        "--device",
        "cpu",
    ]
    launch_cli([*args, "--out", str(tmp_path / "two.json"), "--predictions", str(tmp_path / "two.jsonl")], tmp_path)
    record = json.loads((tmp_path / "two.json").read_text())
    assert record["settings"]["rewiring"]["steps_done"] == 3 and record["settings"]["processes"] == 2
    assert record["settings"]["rewiring"]["batch_size"] == 8  # recorded as asked: the batch of a step, not per process
    # the saved model is the one the processes rewired and probed with: probing it gives the same predictions
    run_cli(
        [
            "probe",
            "--dataset",
            str(synthetic_medlama_hub),
            "--prober",
            "contrastive",
            "--model",
            str(saved),
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "saved.json"),
            "--predictions",
            str(tmp_path / "saved.jsonl"),
        ],
        tmp_path,
    )
    assert (tmp_path / "saved.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    untuned = tmp_path / "untuned.jsonl"
    run_cli(
        [
            "probe",
            "--dataset",
            str(synthetic_medlama_hub),
            "--prober",
            "contrastive",
            "--model",
            str(tiny_encoder),
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "untuned.json"),
            "--predictions",
            str(untuned),
        ],
        tmp_path,
    )
    assert untuned.read_bytes() != (tmp_path / "two.jsonl").read_bytes()  # the rewiring changed the encoder


def test_a_rewiring_batch_that_the_processes_cannot_share_evenly_is_refused(monkeypatch, tmp_path):
    from medprobe.contracts import UserError
    from medprobe.contrastive import rewiring

    monkeypatch.setattr(rewiring.distributed, "num_processes", lambda: 4)
    assert rewiring.rewiring_arguments(str(tmp_path)).per_device_train_batch_size == 48  # the paper's 192 over 4
    with pytest.raises(UserError, match=r"--rewire-batch-size 190 .* 4 processes .* multiple of 4 \(e.g. 188 or 192\)"):
        rewiring.rewiring_arguments(str(tmp_path), per_device_train_batch_size=190)


def test_training_arguments_pinned_to_one_gpu_train_there_alone(monkeypatch, tmp_path):
    # no GPU here: the check is that the pin holds against TrainingArguments' own choice (cuda:0 and
    # every visible GPU), which it makes in a process whose launch local_training hides
    import torch
    from transformers import TrainingArguments
    from transformers.training_args import ParallelMode

    from medprobe.distributed import pin_training_device

    current = []
    monkeypatch.setattr(torch.cuda, "set_device", current.append)
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    assert pin_training_device(args, torch.device("cpu")).device == torch.device("cpu") and not current
    assert (
        pin_training_device(args, torch.device("cuda")).device == torch.device("cpu") and not current
    )  # one process: its own choice
    pinned = pin_training_device(args, torch.device("cuda", 3))
    assert pinned.device == torch.device("cuda", 3) and pinned.n_gpu == 1 and current == [torch.device("cuda", 3)]
    assert pinned.parallel_mode == ParallelMode.NOT_PARALLEL and pinned.train_batch_size == pinned.per_device_train_batch_size
