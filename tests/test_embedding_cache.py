"""The on-disk embedding cache of Contrastive-Probe (medprobe.contrastive.embedding_cache).

Plumbing tests on a tiny random BERT saved as a model folder; each test has its own cache folder
(conftest points MEDPROBE_EMBEDDING_CACHE at it). The cache must return exactly what was
encoded, miss whenever anything the embeddings depend on changed, never return a damaged
chunk, stay under its bound, and stay off when told to or when the weights are not the files'.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from medprobe import digests
from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.contrastive import ContrastiveProbe
from medprobe.contrastive import embedding_cache as ec
from tiny_bert import save_tiny_bert, tiny_bert, tiny_tokenizer, toy_corpus

NAMES = ["fever", "pain", "aspirin", "heart failure", "lung", "fever", "acute kidney disease", "blood"]
QUERIES = ["aspirin may treat [Y] .", "the gene might cause [Y] in the lung .", "[Y] is a disease of the heart ."]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE", str(root))
    return root


@pytest.fixture
def model_dir(tmp_path) -> Path:
    return save_tiny_bert(tmp_path / "tiny")


def load(folder: Path, **kwargs) -> ContrastiveProbe:
    return ContrastiveProbe.from_pretrained(str(folder), device="cpu", show_progress=False, **{"batch_size": 3, **kwargs})


def chunks(root: Path) -> list[Path]:
    """The embedding chunks (not the remembered token ids, in root/tokens/)."""
    return sorted(path for path in root.glob("*/*.npz") if path.parent.name != ec.TOKENS)


def test_a_second_probe_reads_identical_embeddings_and_predictions_plumbing_tiny_random_bert(cache_dir, model_dir, capsys):
    first = load(model_dir)
    names, queries, ranked = first.encode_names(NAMES), first.encode_queries(QUERIES), first.rank(QUERIES, NAMES, 3)
    assert first.timings["embedding_cache_misses"] == 7 + 3 and first.settings["embedding_cache"] == "on"
    assert len(chunks(cache_dir)) == 2  # the names, then the queries; rank() found both
    second = load(model_dir, batch_size=2)  # other batches: the stored vectors are returned as they are
    assert torch.equal(second.encode_names(NAMES), names) and torch.equal(second.encode_queries(QUERIES), queries)
    assert second.rank(QUERIES, NAMES, 3) == ranked
    assert second.timings["embedding_cache_misses"] == 0 and second.timings["embedding_cache_hits"] == 7 + 3 + 3
    assert len(chunks(cache_dir)) == 2
    assert f"embedding cache: 7 of 7 names from {cache_dir} (space " in capsys.readouterr().out


def test_cached_embeddings_equal_uncached_ones_and_new_texts_are_added_plumbing_tiny_random_bert(cache_dir, model_dir):
    load(model_dir).encode_names(NAMES[:4])
    probe = load(model_dir)
    mixed = probe.encode_names(NAMES)  # 4 cached, 3 new, in one encode_cls call
    assert probe.timings["embedding_cache_hits"] == 4 and probe.timings["embedding_cache_misses"] == 3
    plain = load(model_dir, cache=False).encode_names(NAMES)
    assert torch.allclose(mixed, plain, atol=1e-6)
    assert load(model_dir).encode_names(NAMES).equal(mixed)


def test_new_weights_in_the_same_folder_miss_plumbing_tiny_random_bert(cache_dir, model_dir):
    old = load(model_dir).encode_names(NAMES)
    tiny_bert(seed=1).save_pretrained(model_dir)  # same folder, same file names and sizes, other weights
    probe = load(model_dir)
    new = probe.encode_names(NAMES)
    assert probe.timings["embedding_cache_hits"] == 0 and not torch.allclose(new, old)
    assert torch.allclose(new, load(model_dir, cache=False).encode_names(NAMES), atol=1e-6)
    assert len({path.parent for path in chunks(cache_dir)}) == 2


@pytest.mark.parametrize("change", [{"layers": 2}, {"dtype": "bfloat16"}])
def test_layers_and_dtype_are_other_spaces_plumbing_tiny_random_bert(change, cache_dir, model_dir):
    base = load(model_dir)
    base.encode_names(NAMES)
    other = load(model_dir, **change)
    embeddings = other.encode_names(NAMES)
    assert other._space().key != base._space().key and other.timings["embedding_cache_hits"] == 0
    assert torch.allclose(embeddings, load(model_dir, cache=False, **change).encode_names(NAMES), atol=1e-6)


def test_a_shorter_max_length_changes_the_keys_not_the_space_plumbing_tiny_random_bert(cache_dir, model_dir):
    load(model_dir).encode_names(NAMES)
    short = load(model_dir)
    short.name_max_length = 3  # [CLS] + 1 word piece + [SEP]: "heart failure" and "acute kidney disease" are cut
    embeddings = short.encode_names(NAMES)
    assert short.timings["embedding_cache_misses"] == 2 and short.timings["embedding_cache_hits"] == 5
    uncached = load(model_dir, cache=False)
    uncached.name_max_length = 3
    assert torch.allclose(embeddings, uncached.encode_names(NAMES), atol=1e-6)


def test_cache_off_writes_nothing_plumbing_tiny_random_bert(cache_dir, model_dir):
    probe = load(model_dir, cache=False)
    probe.rank(QUERIES, NAMES, 3)
    assert not cache_dir.exists() and probe.settings["embedding_cache"] == "off: --no-cache"
    assert "embedding_cache_hits" not in probe.timings


def test_in_memory_and_rewired_models_do_not_use_the_disk_cache_plumbing_tiny_random_bert(cache_dir, model_dir):
    in_memory = ContrastiveProbe(tiny_bert(), tiny_tokenizer(), device="cpu", show_progress=False)
    in_memory.rank(QUERIES, NAMES, 3)
    assert not cache_dir.exists() and in_memory.settings["embedding_cache"].startswith("off: the model was not loaded")

    probe = load(model_dir)
    before = probe.encode_names(NAMES)
    stored = chunks(cache_dir)
    probe.rewire(toy_corpus(16), rewiring_args(cache_dir.parent / "rewire"))
    after = probe.encode_names(NAMES)
    assert chunks(cache_dir) == stored and not torch.allclose(before, after)
    assert probe.settings["embedding_cache"].startswith("off: rewired") and probe._space() is None
    # the files did not change: a new probe of them still hits what the untuned probe stored
    assert load(model_dir).encode_names(NAMES).equal(before)


def test_a_warm_probe_reads_every_vector_without_loading_the_model_plumbing_tiny_random_bert(cache_dir, model_dir):
    first = load(model_dir)
    ranked = first.rank(QUERIES, NAMES, 3)
    warm = load(model_dir)
    assert warm._model is None and "load_model" in warm.timings  # the first probe remembered its space's parts
    assert warm.rank(QUERIES, NAMES, 3) == ranked and warm._model is None
    assert warm._tokenizer is None  # and the token ids of these names and queries
    assert warm.timings["embedding_cache_misses"] == 0 and warm._space().key == first._space().key
    new = warm.encode_names(["kidney stone"])  # a miss: the model loads, and its vector joins the same space
    assert warm._model is not None and warm._space().key == first._space().key
    assert torch.allclose(new, load(model_dir, cache=False).encode_names(["kidney stone"]), atol=1e-6)
    assert load(model_dir, layers=2)._model is not None  # another identity: nothing remembered, loaded at once


def test_damaged_remembered_token_ids_are_a_miss_plumbing_tiny_random_bert(cache_dir, model_dir):
    ranked = load(model_dir).rank(QUERIES, NAMES, 3)
    stored = sorted((cache_dir / ec.TOKENS).glob("*.npz"))
    assert len(stored) == 2  # the names', the queries'
    stored[0].write_bytes(stored[0].read_bytes()[:-20])
    probe = load(model_dir)
    assert probe.rank(QUERIES, NAMES, 3) == ranked and probe._tokenizer is not None  # tokenized again
    assert sorted((cache_dir / ec.TOKENS).glob("*.npz")) == stored  # the damaged one deleted, then written whole
    with np.load(stored[0]) as data:
        assert ec.read_tokens(cache_dir, stored[0].stem, len(data["lengths"])) is not None


def test_remembered_space_parts_that_do_not_fit_the_model_are_replaced_at_the_first_miss_plumbing_tiny_random_bert(
    cache_dir, model_dir
):
    names = load(model_dir).encode_names(NAMES)
    (identity, parts), *_ = json.loads((cache_dir / ec.SPACES).read_text()).items()
    ec.remember_space(cache_dir, identity, {**parts, "model_class": "NotTheModel"})
    probe = load(model_dir)
    assert probe._model is None and probe._space().key != ec.space_key(parts)  # an empty, wrong space: all miss
    assert torch.equal(probe.encode_names(NAMES), names)  # the model loaded, then read its own space
    assert probe.timings["embedding_cache_hits"] == 7 and ec.remembered_space(cache_dir, identity) == parts


def test_a_warm_run_loads_no_model_to_record_its_device_and_dtype_plumbing_tiny_random_bert(
    synthetic_medlama_hub, cache_dir, model_dir, monkeypatch
):
    """Measured before: naming the resolved device in the recorded command read `prober.model`, which loaded the
    model after the search in every warm run (2.5 s of a 9.7 s warm MedLAMA full run)."""
    import medprobe.run
    from medprobe.run import RunRequest, run

    made = []
    real = medprobe.run.make_prober
    monkeypatch.setattr(medprobe.run, "make_prober", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    request = RunRequest(task="medlama", prober="contrastive", dataset=str(synthetic_medlama_hub), config="hard")
    request.model, request.device, request.out = str(model_dir), "cpu", None
    run(request, print_fn=lambda text: None)  # cold: encodes and fills the cache
    record = run(request, print_fn=lambda text: None)  # warm: every vector from the cache
    assert made[-1]._model is None and "--device cpu --dtype float32" in record.command


def test_a_warm_probe_imports_no_model_code_of_transformers_plumbing_tiny_random_bert(cache_dir, model_dir):
    load(model_dir).rank(QUERIES, NAMES, 3)
    script = (
        "import sys\nfrom medprobe.contrastive import ContrastiveProbe\n"
        f"probe = ContrastiveProbe.from_pretrained({str(model_dir)!r}, device='cpu', show_progress=False)\n"
        f"probe.rank({QUERIES!r}, {NAMES!r}, 3)\n"
        "print(sorted(m for m in ('transformers.modeling_utils', 'transformers.trainer') if m in sys.modules))"
    )
    env = {**os.environ, "MEDPROBE_EMBEDDING_CACHE": str(cache_dir)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def rewiring_args(folder: Path):
    from medprobe.contrastive import rewiring_arguments

    return rewiring_arguments(str(folder), max_steps=2, per_device_train_batch_size=8, learning_rate=1e-2, use_cpu=True)


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_chunk_is_a_miss_and_is_replaced_plumbing_tiny_random_bert(damage, cache_dir, model_dir):
    good = load(model_dir).encode_names(NAMES)
    (chunk,) = chunks(cache_dir)
    data = chunk.read_bytes()
    if damage == "truncate":
        chunk.write_bytes(data[: len(data) // 2])
    else:  # same length, one byte of the embeddings changed
        at = data.find(b"embeddings.npy") + 400
        chunk.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :])
    probe = load(model_dir)
    embeddings = probe.encode_names(NAMES)
    assert probe.timings["embedding_cache_hits"] == 0 and torch.allclose(embeddings, good, atol=1e-6)
    assert chunks(cache_dir) == [chunk] and ec.read_chunk(chunk) is not None  # rewritten whole


@pytest.mark.parametrize("change", ["rows shifted against their keys", "float64 embeddings", "another width"])
def test_a_chunk_rewritten_with_a_valid_checksum_but_not_this_space_s_entries_is_a_miss_plumbing_tiny_random_bert(
    change, cache_dir, model_dir
):
    """Measured before: a chunk rewritten whole (its name the checksum of its new contents) was read as it was:
    shifted rows gave silently wrong embeddings, other widths or dtypes a matmul traceback."""
    good = load(model_dir).encode_names(NAMES)
    (chunk,) = chunks(cache_dir)
    with np.load(chunk) as data:
        arrays = {name: data[name] for name in data.files}  # ids, lengths, embeddings (and what else a chunk holds)
    chunk.unlink()
    if change == "another width":  # a valid chunk of a model with another hidden size, in this space's folder
        ends = np.cumsum(arrays["lengths"]).tolist()
        keys = [tuple(arrays["ids"][end - length : end].tolist()) for end, length in zip(ends, arrays["lengths"].tolist())]
        ec.write_chunk(chunk.parent, keys, np.ones((len(keys), 8), dtype=np.float32))
    else:
        embeddings = arrays["embeddings"]
        arrays["embeddings"] = np.roll(embeddings, 1, axis=0) if change.startswith("rows") else embeddings.astype(np.float64)
        with open(chunk.parent / f"{ec.chunk_checksum(*arrays.values())}.npz", "wb") as handle:
            np.savez(handle, **arrays)
    probe = load(model_dir)
    embeddings = probe.encode_names(NAMES)
    assert probe.timings["embedding_cache_hits"] == 0 and torch.allclose(embeddings, good, atol=1e-6)
    assert probe.rank(QUERIES, NAMES, 3) == load(model_dir, cache=False).rank(QUERIES, NAMES, 3)
    # the bad chunk is gone; the names' chunk written again, and the queries' one
    assert len(chunks(cache_dir)) == 2 and all(ec.read_chunk(path, good.shape[1]) is not None for path in chunks(cache_dir))


def test_the_cache_stays_under_its_bound_evicting_the_least_recently_used_plumbing_tiny_random_bert(
    cache_dir, model_dir, monkeypatch
):
    probe = load(model_dir)
    probe._tokens_identity = None  # no token ids remembered: only embedding chunks are written here
    written = []
    for query in QUERIES:  # one chunk each
        probe.encode_queries([query])
        (new,) = set(chunks(cache_dir)) - set(written)
        written.append(new)
    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE_MAX_GB", str(3.5 * written[0].stat().st_size / 1e9))
    for age, path in enumerate(written):  # distinct times, oldest first (file times can be coarse)
        os.utime(path, (1000 + age, 1000 + age))
    probe.encode_queries(QUERIES[:1])  # a hit makes the oldest chunk the most recently used
    probe.encode_names(["pain"])  # a fourth chunk goes over the bound: the least recently used goes
    kept = set(chunks(cache_dir))
    assert len(kept) == 3 and written[0] in kept and written[1] not in kept
    assert ec.cache_size(cache_dir) <= ec.max_bytes()
    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE_MAX_GB", "0")
    probe.encode_names(["lung"])
    assert chunks(cache_dir) == []  # a bound of 0 keeps nothing, and the run goes on


def test_a_bad_bound_is_a_user_error(cache_dir, model_dir, monkeypatch):
    monkeypatch.setenv("MEDPROBE_EMBEDDING_CACHE_MAX_GB", "two")
    with pytest.raises(UserError, match="MEDPROBE_EMBEDDING_CACHE_MAX_GB='two' is not a size in GB"):
        load(model_dir)


def test_the_default_location_is_under_hf_home(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.delenv("MEDPROBE_EMBEDDING_CACHE")
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "hf"))
    assert ec.cache_root() == tmp_path / "hf" / "medprobe" / "embeddings"


def test_a_hub_model_is_hashed_from_its_cached_snapshot(cache_dir, model_dir, monkeypatch, tmp_path):
    from huggingface_hub import constants

    from medprobe.contrastive.prober import model_files_digest

    repo = tmp_path / "hub" / "models--org--tiny"
    snapshot = repo / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    for path in model_dir.iterdir():
        (snapshot / path.name).write_bytes(path.read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert model_files_digest("org/tiny") == model_files_digest(str(model_dir)) is not None
    assert model_files_digest("org/absent") is None


def test_weight_digests_are_remembered_per_file(cache_dir, model_dir, monkeypatch):
    monkeypatch.setattr(digests, "RACY_SECONDS", -1.0)  # the files were just written: remember them anyway
    digest = digests.weights_digest(model_dir, cache_dir)
    known = json.loads((cache_dir / digests.DIGESTS).read_text())
    assert len(known) == 1 and next(iter(known)).startswith(str(model_dir.resolve() / "model.safetensors"))
    assert digests.weights_digest(model_dir, cache_dir) == digest
    assert digests.weights_digest(cache_dir, cache_dir) is None  # no weight files


def test_no_cache_on_the_command_line_plumbing_tiny_random_bert(synthetic_medlama_hub, model_dir, cache_dir, tmp_path, capsys):
    def probe(out, *extra):
        return main(
            [
                "probe",
                "--dataset",
                str(synthetic_medlama_hub),
                "--prober",
                "contrastive",
                "--model",
                str(model_dir),
                "--out",
                str(out),
                "--predictions",
                str(out.with_suffix(".jsonl")),
                *extra,
            ]
        )

    assert probe(tmp_path / "off.json", "--no-cache") == 0 and not cache_dir.exists()
    assert probe(tmp_path / "cold.json") == 0 and probe(tmp_path / "warm.json") == 0
    records = {run: json.loads((tmp_path / f"{run}.json").read_text()) for run in ("off", "cold", "warm")}
    assert records["off"]["settings"]["embedding_cache"] == "off: --no-cache"
    assert records["cold"]["settings"]["embedding_cache"] == records["warm"]["settings"]["embedding_cache"] == "on"
    assert records["warm"]["timings"]["embedding_cache_misses"] == 0 < records["warm"]["timings"]["embedding_cache_hits"]
    assert (tmp_path / "cold.jsonl").read_bytes() == (tmp_path / "warm.jsonl").read_bytes()
    assert records["off"]["metrics"] == records["warm"]["metrics"]
    with pytest.raises(SystemExit):
        main(["probe", "--prober", "contrastive", "--help"])
    assert "--no-cache" in capsys.readouterr().out


def test_processes_of_a_launch_encode_only_what_all_of_them_miss(monkeypatch):
    """encode_cls is collective under a launch: a text one process has cached and another has not is
    encoded by all (with the same missing list everywhere), never by some of them."""
    from medprobe import distributed
    from medprobe.contrastive.prober import agreed_hits

    keys = [(1, 2), (1, 3), (1, 4)]
    here = {(1, 2): "a", (1, 3): "b"}
    other_process = [False, True, True]
    monkeypatch.setattr(distributed, "launched", lambda: True)
    monkeypatch.setattr(distributed, "gather", lambda local: [*local, other_process])
    assert agreed_hits(keys, here) == {(1, 3): "b"}


def test_a_two_process_launch_writes_the_cache_once_and_reads_it_plumbing_tiny_random_bert(
    synthetic_medlama_hub, model_dir, cache_dir, tmp_path
):
    from launch import launch_cli

    def run(name: str, *extra: str) -> dict:
        args = [
            "probe",
            "--prober",
            "contrastive",
            "--dataset",
            str(synthetic_medlama_hub),
            "--model",
            str(model_dir),
            "--candidates",
            "relation",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / f"{name}.json"),
            "--predictions",
            str(tmp_path / f"{name}.jsonl"),
            *extra,
        ]
        if name == "alone":
            assert main(args) == 0
        else:
            launch_cli(args, tmp_path, launcher="accelerate")
        return json.loads((tmp_path / f"{name}.json").read_text())

    run("alone", "--no-cache")
    cold = run("cold")
    written = chunks(cache_dir)
    warm = run("warm")
    predictions = {(tmp_path / f"{name}.jsonl").read_bytes() for name in ("alone", "cold", "warm")}
    assert len(predictions) == 1
    assert cold["timings"]["embedding_cache_misses"] > 0  # (a few hits: texts repeated across relations)
    assert warm["timings"]["embedding_cache_misses"] == 0 and chunks(cache_dir) == written


def test_a_saved_rewiring_is_cached_as_its_folder_so_probing_that_folder_encodes_nothing_plumbing_tiny_random_bert(
    cache_dir, model_dir, tmp_path
):
    corpus, saved = tmp_path / "corpus.txt", tmp_path / "rewired"
    corpus.write_text("\n".join(toy_corpus(16)) + "\n", encoding="utf-8")
    rewired = ContrastiveProbe.create(
        str(model_dir),
        device="cpu",
        batch_size=3,
        rewire_corpus=str(corpus),
        rewire_steps=2,
        rewire_batch_size=8,
        rewire_learning_rate=1e-2,
        save_rewired=str(saved),
    )
    rewired.show_progress = False
    ranked = rewired.rank(QUERIES, NAMES, 3)
    assert rewired.settings["embedding_cache"] == "on" and rewired.timings["embedding_cache_misses"] == 7 + 3
    again = load(saved)  # the demo's second probe of a rewired model (--exclude-head)
    assert again.rank(QUERIES, NAMES, 3) == ranked
    assert again.timings["embedding_cache_misses"] == 0 and again.timings["embedding_cache_hits"] == 7 + 3
    fresh = load(saved, cache=False)  # what the saved folder's model encodes itself: the same vectors
    assert torch.equal(fresh.encode_names(NAMES), again.encode_names(NAMES))
    assert torch.equal(fresh.encode_queries(QUERIES), again.encode_queries(QUERIES))
