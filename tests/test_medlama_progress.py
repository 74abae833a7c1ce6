"""Ranking relation by relation shows one bar over all queries, and gives the same predictions."""

import pytest
import tqdm.auto
from datasets import Dataset

from medprobe.contracts import Prober
from medprobe.lm.candidate_scoring import ShortlistProber
from medprobe.lm.causal_lm import CausalLMProbe
from medprobe.tasks.medlama import relation_answer_spaces
from medprobe.tasks.ranking import rank_queries
from tiny_models import byte_bpe_tokenizer, tiny_random_gpt2

ROWS = {
    "relation": ["may_treat", "may_treat", "has_site", "may_treat", "has_site"],
    "head_name": ["aspirin", "ibuprofen", "gout", "heparin", "asthma"],
    "query": [
        "aspirin may treat [Y] .",
        "ibuprofen may treat [Y] .",
        "gout is found in [Y] .",
        "heparin may treat [Y] .",
        "asthma is found in [Y] .",
    ],
    "answers": [["fever"], ["pain", "fever"], ["joint"], ["thrombosis"], ["lung", "airway"]],
}


@pytest.fixture
def bars(monkeypatch):
    """Every tqdm bar made while ranking, with the count it reached."""
    made = []

    class Recording(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(tqdm.auto, "tqdm", Recording)  # medprobe.progress.progress_bar makes its bars from here
    monkeypatch.setattr("medprobe.progress.on_terminal", lambda: True)  # pytest's stderr is not a terminal
    return made


def causal_probe(progress: bool = True) -> CausalLMProbe:
    tokenizer = byte_bpe_tokenizer()
    return CausalLMProbe(tiny_random_gpt2(tokenizer), tokenizer, batch_size=4, progress=progress)


def test_causal_lm_per_relation_has_one_bar_over_all_queries_and_the_same_predictions(bars):
    ds = Dataset.from_dict(ROWS)
    candidates = relation_answer_spaces(ds)
    probe = causal_probe()
    # what rank_queries computed before: one rank call per relation, each with its own bar
    expected = [None] * ds.num_rows
    for relation, names in candidates.items():
        indices = [i for i, r in enumerate(ds["relation"]) if r == relation]
        for i, ranked in zip(indices, probe.rank([ds["query"][i] for i in indices], names, 2)):
            expected[i] = ranked
    assert [bar.total for bar in bars] == [2, 3]  # one bar per relation, the old way
    bars.clear()

    assert rank_queries(probe, ds["query"], ds["relation"], candidates, 2) == expected
    assert len(bars) == 1 and bars[0].total == ds.num_rows and bars[0].n == ds.num_rows  # one bar, every query once
    assert probe.progress is True and probe.progress_bar is None  # the prober's own bar is back for later calls


def test_rerank_scorer_advances_the_one_bar_per_query(bars):
    ds = Dataset.from_dict(ROWS)
    candidates = relation_answer_spaces(ds)
    shortlists = {query: names for query, relation in zip(ds["query"], ds["relation"]) for names in [candidates[relation]]}
    prober = ShortlistProber(causal_probe(), shortlists)
    rank_queries(prober, ds["query"], ds["relation"], candidates, 2)
    assert len(bars) == 1 and bars[0].n == ds.num_rows


class QuietableProber(Prober):
    """A ranking prober with its own bar switch but no per-query hook: the bar advances per relation."""

    name, kinds = "quietable", ("ranking",)

    def __init__(self):
        self.show_progress = True
        self.seen: list[bool] = []

    def rank(self, queries, candidates, k):
        self.seen.append(self.show_progress)
        return [list(candidates)[:k] for _ in queries]


def test_other_probers_have_their_bars_off_during_the_run_and_back_after(bars):
    ds = Dataset.from_dict(ROWS)
    prober = QuietableProber()
    predictions = rank_queries(prober, ds["query"], ds["relation"], relation_answer_spaces(ds), 1)
    assert predictions == [["fever"], ["fever"], ["airway"], ["fever"], ["airway"]]  # the first of each sorted list
    assert prober.seen == [False, False] and prober.show_progress is True
    assert len(bars) == 1 and bars[0].n == ds.num_rows


def test_no_bar_when_the_prober_was_asked_for_none(bars):
    ds = Dataset.from_dict(ROWS)
    rank_queries(causal_probe(progress=False), ds["query"], ds["relation"], relation_answer_spaces(ds), 1)
    assert bars == []  # neither the run's bar nor the prober's
