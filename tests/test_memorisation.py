"""The memorisation signal (issue 39, section 4): Min-K%++ of each query with its gold answer, computed in batches by
the causal-LM prober (medprobe.lm.mink), and acc@k by its tertile (medprobe.tasks.memorisation), recomputed by the
records loader. Tiny random models check plumbing and arithmetic, never knowledge (tests/test_smollm2.py checks the
batched Min-K%++ on the packaged SmolLM2)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from medprobe.cli import main
from medprobe.contracts import UserError
from medprobe.lm.causal_lm import CausalLMProbe
from medprobe.records import RecordError, load_run
from medprobe.records.outcomes import outcomes_path
from medprobe.stats import CHUNK, Outcomes, Sample, estimate, intervals, resample_index
from medprobe.tasks import memorisation
from tiny_models import byte_bpe_tokenizer, tiny_random_gpt2, tiny_random_llama

TEXTS = [
    "aspirin may treat fever.",
    "the gene has heart failure, the disease is alpha.",
    "the",
    "chronic heart failure of the gene",
    "cough.",
    "renal failure may treat the gene of alphazine, the disease is chronic.",
]


def reference_z(model, tokenizer, text: str) -> list[float]:
    """The definition, one token at a time: a forward pass over the text before token t alone, the full
    vocabulary's log-probabilities in float64, z_t = (log p(x_t) - mu_t) / sigma_t with mu_t, sigma_t the mean and
    std of log p(z) for z ~ p(.|x<t)."""
    ids = tokenizer(text)["input_ids"]
    z = []
    for t in range(1, len(ids)):
        with torch.no_grad():
            logits = model(torch.tensor([ids[:t]])).logits[0, -1].double()
        logp = torch.log_softmax(logits, dim=-1)
        p = logp.exp()
        mu = float((p * logp).sum())
        sigma = math.sqrt(float((p * (logp - mu) ** 2).sum()))
        z.append((float(logp[ids[t]]) - mu) / sigma)
    return z


def reference_mink_pp(z: list[float], percent: float) -> float:
    """The mean of the lowest max(1, floor(T percent / 100)) of a text's T token z values (NaN for none)."""
    if not z:
        return math.nan
    lowest = sorted(z)[: max(1, math.floor(len(z) * percent / 100))]
    return sum(lowest) / len(lowest)


@pytest.mark.parametrize("make_model", [tiny_random_gpt2, tiny_random_llama], ids=["tiny_random_gpt2", "tiny_random_llama"])
@pytest.mark.parametrize("bos", [False, True], ids=["no_bos", "bos"])
def test_batched_mink_pp_equals_a_token_by_token_reference_plumbing(make_model, bos):
    tokenizer = byte_bpe_tokenizer(bos=bos)
    model = make_model(tokenizer)
    z = [reference_z(model, tokenizer, text) for text in TEXTS]
    for percent in (20.0, 50.0):
        probe = CausalLMProbe(model, tokenizer, batch_size=4, progress=False, memorisation=True, mink_percent=percent)
        found = probe.memorisation_scores(TEXTS)
        # float32 passes against a float64 reference: z values of magnitude ~1-5 agree to ~1e-6
        np.testing.assert_allclose(found, [reference_mink_pp(values, percent) for values in z], rtol=0, atol=1e-4)
        assert np.isnan(found[2]) != bos  # "the" is one token: scored only after a BOS


@pytest.mark.parametrize("make_model", [tiny_random_gpt2, tiny_random_llama], ids=["tiny_random_gpt2", "tiny_random_llama"])
def test_mink_pp_is_the_same_in_batches_of_1_and_4_padding_included_plumbing(make_model):
    tokenizer = byte_bpe_tokenizer(bos=True)
    model = make_model(tokenizer)
    probe = CausalLMProbe(model, tokenizer, batch_size=4, progress=False, memorisation=True)
    batched = probe.memorisation_scores(TEXTS)  # texts of 2 to 20 tokens: each batch of 4 is padded
    probe.batch_size = 1
    one_by_one = probe.memorisation_scores(TEXTS)
    np.testing.assert_allclose(batched, one_by_one, rtol=0, atol=1e-5)  # float32 noise of other shapes


def test_the_filled_text_is_the_one_the_prober_ranks_and_a_bad_percent_is_refused():
    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_gpt2(tokenizer)
    assert CausalLMProbe(model, tokenizer).filled("aspirin may treat [Y] .", "fever") == "aspirin may treat fever."
    assert CausalLMProbe(model, tokenizer, literal_template=True).filled("a [Y] .", "b") == "a b ."
    for percent in (0, 120):
        with pytest.raises(UserError, match="--mink-percent must be in"):
            CausalLMProbe(model, tokenizer, mink_percent=percent)


# --- the tertile metrics ----------------------------------------------------------------------------

RANKS = [1, None, 3, 1, None, 2, 1, 1, None, 1, 12, 2]
MINK = [-0.5, -2.0, 0.3, -0.5, -1.1, None, 0.9, -3.0, 0.3, 1.4, -0.2, -0.5]  # ties at both cuts, one item without a score


def twelve() -> Outcomes:
    ids = [f"q{i}" for i in range(12)]
    groups = ["r1", "r2", "r3"] * 4
    return Outcomes.build(ids, groups, {"rank": RANKS, "mink_pp": MINK})


def brute_force(ranks: list, minks: list, k: int) -> dict[str, float]:
    """The facet's four numbers from plain lists: the m scored items sorted, cut at the ceil(m/3)-th and
    ceil(2m/3)-th smallest score, ties with the lower third."""
    scored = [(mink, rank is not None and not math.isnan(rank) and rank <= k) for rank, mink in zip(ranks, minks)]
    scored = [(mink, hit) for mink, hit in scored if mink is not None and not math.isnan(mink)]
    ordered = sorted(mink for mink, _ in scored)
    m = len(ordered)
    first, second = ordered[math.ceil(m / 3) - 1], ordered[math.ceil(2 * m / 3) - 1]
    parts = {
        "low": [hit for mink, hit in scored if mink <= first],
        "mid": [hit for mink, hit in scored if first < mink <= second],
        "high": [hit for mink, hit in scored if mink > second],
    }
    values = {name: sum(hits) / len(hits) if hits else math.nan for name, hits in parts.items()}
    values["high_minus_low"] = values["high"] - values["low"]
    return values


def test_tertile_metrics_and_their_intervals_equal_a_brute_force_recomputation_on_12_items():
    outcomes = twelve()
    estimators = memorisation.estimators({"k": [1, 3], "mink_percent": 20.0})
    assert list(estimators) == [
        f"mink_{part}@{k}" for k in (1, 3) for part in ("low_acc", "mid_acc", "high_acc", "high_minus_low")
    ]
    rows = [outcomes.ids.index(f"q{i}") for i in range(12)]  # Outcomes sorts items by group
    ranks = [None if np.isnan(outcomes.columns["rank"][r]) else outcomes.columns["rank"][r] for r in range(12)]
    minks = [None if np.isnan(outcomes.columns["mink_pp"][r]) else outcomes.columns["mink_pp"][r] for r in range(12)]
    assert [ranks[r] for r in rows] == RANKS and [minks[r] for r in rows] == MINK
    # 11 scored items: cut at the 4th (-0.5, as the 5th and 6th) and the 8th (0.3, as the 9th) smallest
    assert brute_force(RANKS, MINK, 1) == {"low": 3 / 6, "mid": 0 / 3, "high": 2 / 2, "high_minus_low": 2 / 2 - 3 / 6}
    resamples, seed = 300, 7
    rng = np.random.default_rng(seed)
    draws = []
    for done in range(0, resamples, CHUNK):  # the bootstrap's own draws: plain, then stratified, per chunk
        size = min(CHUNK, resamples - done)
        draws.append(resample_index(outcomes, size, rng, stratified=False))
        resample_index(outcomes, size, rng, stratified=True)
    index = np.concatenate(draws)
    found = intervals(outcomes, estimators, resamples=resamples, seed=seed)
    for k in (1, 3):
        whole = brute_force(ranks, minks, k)
        per_resample = [brute_force([ranks[i] for i in row], [minks[i] for i in row], k) for row in index]
        for part, name in memorisation.metric_names(k).items():
            assert estimate(outcomes, estimators[name]) == whole[part]
            values = np.array([values[part] for values in per_resample])
            tail = (1 - 0.95) / 2  # as the bootstrap computes it
            low, high = np.quantile(values[np.isfinite(values)], [tail, 1 - tail])
            assert (found[name]["low"], found[name]["high"]) == (low, high), name


def test_tertile_metrics_of_swapped_columns_are_each_rows_own_thirds():
    """A paired permutation (compare) hands the estimators one column per resample: each row is cut by its own scores."""
    outcomes = twelve()
    rng = np.random.default_rng(3)
    ranks = np.where(rng.random((5, 12)) < 0.2, np.nan, rng.integers(1, 6, (5, 12)).astype(float))
    minks = np.round(rng.normal(size=(5, 12)), 1)  # rounded: ties
    minks[0, 4] = np.nan
    sample = Sample(outcomes, None, {"rank": ranks, "mink_pp": minks})
    for part, name in memorisation.metric_names(2).items():
        values = memorisation.tertile_metric(sample, k=2, part=part)
        for row in range(5):
            assert values[row] == brute_force(list(ranks[row]), list(minks[row]), 2)[part], (name, row)


# --- a run with --memorisation, read back ---------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny_gpt2")
    tokenizer = byte_bpe_tokenizer()
    tiny_random_gpt2(tokenizer, n_positions=256).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def probe(hub: Path, model: Path, out: Path, *extra: str) -> int:
    argv = ["probe", "--dataset", str(hub), "--prober", "causal-lm", "--model", str(model), "--device", "cpu"]
    return main([*argv, "--out", str(out), "--k", "1,3", "--predictions", str(out.with_suffix(".jsonl")), *extra])


@pytest.fixture(scope="module")
def runs(synthetic_medlama_hub, gpt2_dir, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("memorisation_runs")
    found = {}
    for name, extra in (("off", ()), ("on", ("--memorisation",)), ("on50", ("--memorisation", "--mink-percent", "50"))):
        found[name] = folder / f"{name}.json"
        assert probe(synthetic_medlama_hub, gpt2_dir, found[name], *extra) == 0
    return found


def test_memorisation_adds_the_column_metrics_and_method_and_changes_nothing_else(runs):
    off, on = load_run(runs["off"]), load_run(runs["on"])
    facets = {"rank", "margin", "confidence", "control_rank"}  # every causal-lm run's columns (medprobe.tasks.facets)
    assert off.outcomes.columns.keys() == facets  # the option off: the record as before
    assert not any("mink" in key or "memoris" in key for key in [*off.record.settings, *off.record.metrics, *off.record.counts])
    assert on.outcomes.columns.keys() == facets | {"mink_pp"} and np.isfinite(on.outcomes.columns["mink_pp"]).all()
    np.testing.assert_array_equal(on.outcomes.columns["rank"], off.outcomes.columns["rank"])
    assert runs["on"].with_suffix(".jsonl").read_bytes() == runs["off"].with_suffix(".jsonl").read_bytes()
    assert {key: on.record.metrics[key] for key in off.record.metrics} == off.record.metrics
    added = sorted(set(on.record.metrics) - set(off.record.metrics))
    assert added == sorted(name for k in (1, 3) for name in memorisation.metric_names(k).values())
    assert set(on.record.intervals) == set(on.record.metrics)
    method = on.record.settings["memorisation"]
    assert on.record.settings["mink_percent"] == 20.0 and "not a contamination verdict" in method and "Das et al. 2024" in method
    assert on.record.outcomes["fields"]["mink_pp"].startswith("Min-K%++ (the lowest 20% of token scores) of the query")
    assert "--memorisation" in on.record.command and on.record.counts["queries_with_mink_pp"] == len(on.outcomes)
    assert on.record.timings["memorisation"] > 0 and "memorisation" not in off.record.timings


def test_compare_pairs_the_tertile_metrics_of_two_runs(runs, tmp_path, capsys):
    assert main(["compare", str(runs["on"]), str(runs["on50"]), "--out", str(tmp_path / "cmp")]) == 0
    [pair] = json.loads((tmp_path / "cmp" / "compare.json").read_text())["comparisons"]
    on50 = load_run(runs["on50"]).record
    assert on50.settings["mink_percent"] == 50.0 and pair["differing"]["mink_percent"] == [20.0, 50.0]
    for name in memorisation.metric_names(3).values():
        found = pair["differences"][name]
        assert found["difference"] == pytest.approx(on50.metrics[name] - load_run(runs["on"]).record.metrics[name], abs=1e-12)
        assert found["test"] == "paired permutation" and 0 < found["p_value"] <= 1


def edit_outcome(run: Path, item: str, value: float) -> None:
    """One item's mink_pp changed in the outcomes file, and the file's digests in the JSON fixed to match."""
    path = outcomes_path(run)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line["id"] == item:
            line["mink_pp"] = value
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    data = json.loads(run.read_text())
    data["outcomes"]["sha256"] = digest
    data["files"][path.name] = digest
    run.write_text(json.dumps(data, indent=2))


def test_the_loader_refuses_an_edited_metric_or_an_edited_score(runs, tmp_path):
    for name in ("on.json", "on.outcomes.jsonl", "on.jsonl"):
        (tmp_path / name).write_bytes((runs["on"].parent / name).read_bytes())
    run = tmp_path / "on.json"
    data = json.loads(run.read_text())
    data["metrics"]["mink_high_minus_low@3"] += 0.25
    run.write_text(json.dumps(data, indent=2))
    with pytest.raises(RecordError, match=r"mink_high_minus_low@3 is .* in the file but .* from its 57 per-item outcomes"):
        load_run(run)
    run.write_bytes(runs["on"].read_bytes())
    loaded = load_run(run)
    estimators = memorisation.estimators(loaded.record.settings)
    # a score moved to the top: an item that changes a metric when it does (there is one: hits differ by third)
    top = float(np.nanmax(loaded.outcomes.columns["mink_pp"])) + 1
    for item in loaded.outcomes.ids:
        row = loaded.outcomes.ids.index(item)
        columns = {**loaded.outcomes.columns, "mink_pp": loaded.outcomes.columns["mink_pp"].copy()}
        columns["mink_pp"][row] = top
        moved = Outcomes.build(loaded.outcomes.ids, loaded.outcomes.groups, columns)
        if any(estimate(moved, e) != loaded.record.metrics[name] for name, e in estimators.items()):
            break
    else:
        pytest.fail("no single score changes a tertile metric")
    edit_outcome(run, item, top)
    with pytest.raises(RecordError, match=r"mink_.* is .* in the file but .* from its 57 per-item outcomes"):
        load_run(run)


def test_a_prober_asked_for_memorisation_without_token_log_probabilities_says_so_once(capsys):
    class Plugin:
        name = "plugin-ranker"
        memorisation = True

    assert memorisation.measure(Plugin(), ["a [Y] ."], [["b"]]) is None
    assert capsys.readouterr().out == (
        "note: --memorisation: prober plugin-ranker gives no token log-probabilities; the memorisation facet is left out\n"
    )
    Plugin.memorisation = False
    assert memorisation.measure(Plugin(), ["a [Y] ."], [["b"]]) is None and capsys.readouterr().out == ""
