"""A run launched as 2 CPU processes (torchrun / accelerate launch, gloo) equals the 1-process run:
the ranking probers split the queries (or, Contrastive-Probe, its encoding) over the processes and
gather them back in order; only the main process prints the table and writes the files.

Plumbing tests with tiny random models on the synthetic MedLAMA and the generated context-variance
data; each launch starts two Python processes (~10 s)."""

import json
from pathlib import Path

import pytest

from launch import launch, launch_cli
from medprobe.cli import main
from tiny_bert import save_tiny_bert
from tiny_models import tiny_random_bert_mlm


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory):
    model, tokenizer = tiny_random_bert_mlm(max_position_embeddings=256)
    folder = tmp_path_factory.mktemp("tiny_mlm")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    return str(save_tiny_bert(tmp_path_factory.mktemp("tiny_encoder")))


@pytest.fixture(scope="module")
def context_variance_hub(tmp_path_factory):
    from medprobe.building.build import build

    out = tmp_path_factory.mktemp("cv") / "hub"
    build("context_variance", out, configs=["real-target"])
    return str(out)


def one_and_two_processes(tmp_path, capsys, argv: list[str], launcher: str = "torchrun") -> tuple[dict, dict]:
    """Run `medprobe probe ARGV` in this process and as 2 processes, each with its own --out and
    --predictions; returns both results files after checking the predictions bytes are equal and
    that the 2-process run printed the results table once."""
    outputs = {}
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        args = [
            "probe",
            *argv,
            "--device",
            "cpu",
            "--out",
            str(folder / "results.json"),
            "--predictions",
            str(folder / "p.jsonl"),
        ]
        if name == "one":
            capsys.readouterr()
            assert main(args) == 0
            printed = [line for line in capsys.readouterr().out.splitlines() if line.strip() and not line.startswith("wrote ")]
            table = printed[-1]  # the table's last line (its overall row)
        else:
            result = launch_cli(args, tmp_path, launcher=launcher)
            outputs["stdout"] = result.stdout
        # nothing else, no temp left
        assert sorted(path.name for path in folder.iterdir()) == ["p.jsonl", "results.json", "results.outcomes.jsonl"]
        outputs[name] = json.loads((folder / "results.json").read_text())
    assert (tmp_path / "one" / "p.jsonl").read_bytes() == (tmp_path / "two" / "p.jsonl").read_bytes()
    assert_same_outcomes(tmp_path / "one" / "results.outcomes.jsonl", tmp_path / "two" / "results.outcomes.jsonl")
    assert outputs["stdout"].count(table) == 1, outputs["stdout"]  # printed by the main process only
    return outputs["one"], outputs["two"]


# Scores the records keep per item (a ranking's top-1 margin, a probability): each process batches its own share of
# the queries, padded to other lengths, so they differ from the one-process run's by float noise (2.4e-7 on a margin
# of 0.089 here); the names, ranks and everything counted from them are the same.
FLOAT_FIELDS = ("margin", "confidence")


def assert_same_outcomes(one: Path, two: Path) -> None:
    lines = [[json.loads(line) for line in path.read_text().splitlines()] for path in (one, two)]
    assert len(lines[0]) == len(lines[1])
    for a, b in zip(*lines):
        assert {k: v for k, v in a.items() if k not in FLOAT_FIELDS} == {k: v for k, v in b.items() if k not in FLOAT_FIELDS}
        for field in FLOAT_FIELDS:
            assert (a.get(field) is None) == (b.get(field) is None), (field, a, b)
            if a.get(field) is not None:
                assert b[field] == pytest.approx(a[field], rel=1e-4, abs=1e-6), (field, a, b)


def assert_same_scores(one: dict, two: dict) -> None:
    for key in ("benchmark", "metrics", "per_group", "counts", "intervals", "chance", "data_fingerprint", "subset"):
        assert one[key] == two[key], key
    drop_digest = [{k: v for k, v in run["outcomes"].items() if k != "sha256"} for run in (one, two)]
    assert drop_digest[0] == drop_digest[1]  # the same items and fields; their margins may differ by float noise
    assert "processes" not in one["settings"] and two["settings"]["processes"] == 2
    assert {k: v for k, v in one["settings"].items()} == {k: v for k, v in two["settings"].items() if k != "processes"}


def test_mask_average_ranking_on_two_processes_gives_the_same_predictions_bytes_plumbing_tiny_random_bert(
    synthetic_medlama_hub, tiny_mlm, tmp_path, capsys
):
    one, two = one_and_two_processes(
        tmp_path, capsys, ["--prober", "mask-average", "--dataset", str(synthetic_medlama_hub), "--model", tiny_mlm, "--k", "1,3"]
    )
    assert_same_scores(one, two)
    assert one["counts"]["queries"] > 2  # each process had queries to rank


def test_contrastive_probe_spreads_its_encoding_over_two_processes_with_the_same_predictions_plumbing_tiny_bert(
    synthetic_medlama_hub, tiny_encoder, tmp_path, capsys
):
    one, two = one_and_two_processes(
        tmp_path,
        capsys,
        # --no-cache: the 1-process run would fill the embedding cache and the 2-process run read it all,
        # encoding nothing (tests/test_embedding_cache.py checks the cache under a launch)
        [
            "--prober",
            "contrastive",
            "--dataset",
            str(synthetic_medlama_hub),
            "--model",
            tiny_encoder,
            "--candidates",
            "relation",
            "--no-cache",
        ],
        launcher="accelerate",
    )
    assert_same_scores(one, two)


def test_candidate_scorer_on_context_variance_splits_the_pairs_over_two_processes_plumbing_tiny_random_bert(
    context_variance_hub, tiny_mlm, tmp_path, capsys
):
    one, two = one_and_two_processes(
        tmp_path,
        capsys,
        [
            "--prober",
            "mask-average",
            "--task",
            "context_variance",
            "--dataset",
            context_variance_hub,
            "--config",
            "real-target",
            "--model",
            tiny_mlm,
            "--per-relation",
            "1",
        ],
    )
    assert_same_scores(one, two)
    assert one["counts"]["instances"] >= 2


SHARES_SCRIPT = """
import json, sys
from medprobe import distributed

class Recording:  # a ranking prober that remembers what it was asked
    collective = False
    def __init__(self):
        self.seen = []
    def rank(self, queries, candidates, k):
        self.seen.extend(queries)
        return [[q.upper()] for q in queries]

prober = Recording()
queries = [f"q{i}" for i in range(7)]
ranked = distributed.rank_in_shards(prober, queries, ["a"], 1)
rows = distributed.round_robin(list(range(7)))
share = {"rank": distributed.process_index(), "seen": prober.seen, "ranked": ranked, "rows": rows,
         "main": distributed.is_main_process()}
with open(f"{sys.argv[1]}/share-{distributed.process_index()}.json", "w") as out:  # a file each: stdout lines can interleave
    json.dump(share, out)
distributed.finish()
"""


def test_rank_in_shards_gives_each_process_its_share_and_everyone_the_whole_list_in_order(tmp_path):
    script = tmp_path / "shares.py"
    script.write_text(SHARES_SCRIPT)
    launch([str(script), str(tmp_path)], tmp_path)
    shares = [json.loads((tmp_path / f"share-{rank}.json").read_text()) for rank in (0, 1)]
    assert [share["rank"] for share in shares] == [0, 1]
    assert [share["seen"] for share in shares] == [["q0", "q1", "q2", "q3"], ["q4", "q5", "q6"]]  # contiguous shares
    assert all(share["ranked"] == [[f"Q{i}"] for i in range(7)] for share in shares)  # gathered, in order, everywhere
    assert [share["rows"] for share in shares] == [[0, 2, 4, 6], [1, 3, 5]]
    assert [share["main"] for share in shares] == [True, False]


def test_medprobe_profile_runs_unchanged_under_a_two_process_launch_plumbing_tiny_bert(tiny_encoder, tmp_path):
    # context_variance is built into DIR/datasets by the main process, then probed by Contrastive-Probe
    argv = ["profile", "--model", tiny_encoder, "--quick", "--device", "cpu", "--benchmarks", "context_variance"]
    assert main([*argv, "--out", str(tmp_path / "one")]) == 0
    result = launch_cli([*argv, "--out", str(tmp_path / "two")], tmp_path)
    one, two = (json.loads((tmp_path / name / "profile.json").read_text()) for name in ("one", "two"))
    assert [row["value"] for row in one["headline"]] == [row["value"] for row in two["headline"]]
    assert len(one["runs"]) == len(two["runs"]) == 1
    for run_one, run_two in zip(one["runs"], two["runs"]):
        assert Path(run_one["predictions"]).read_bytes() == Path(run_two["predictions"]).read_bytes()
    assert result.stdout.count("building context_variance") == 1  # printed (and built) by the main process only
    assert sorted(path.name for path in (tmp_path / "two").iterdir()) == sorted(
        path.name for path in (tmp_path / "one").iterdir()
    )
