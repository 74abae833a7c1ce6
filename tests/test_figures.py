"""Figures have no overlapping labels: every text's extent, measured with matplotlib's renderer, is clear of the
other texts, of the chance and floor markers, of the interval lines and caps, and of the legend
(tests/figure_overlaps.py). Checked on profile.png and on `--plot`'s per-group chart of the demo's sample."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from figure_overlaps import overlaps  # noqa: E402
from medprobe.profiling.profile import Profile, profile_figure  # noqa: E402
from medprobe.records.record import RunRecord  # noqa: E402
from medprobe.records.tables import per_group_figure  # noqa: E402


def headline(benchmark, config, prober, metric, value, low, high, chance, floor=None) -> dict:
    return {
        "benchmark": benchmark,
        "config": config,
        "prober": prober,
        "metric": metric,
        "value": value,
        "low": low,
        "high": high,
        "chance": chance,
        "floor": floor,
    }


# the rows of the profile that showed the bug (minilm --quick: "34.1" was drawn over context variance's chance
# tick at 48.6), and rows that crowd the right edge (a value near 100, chance beyond the interval)
ROWS = [
    headline("medlama", "full", "contrastive", "acc@10", 0.443, 0.341, 0.545, 0.0565),
    headline("medlama", "hard", "contrastive", "acc@10", 0.430, 0.325, 0.535, 0.058),
    headline("mst", None, "mlm-head", "accuracy", 0.51, 0.47, 0.555, 0.434, floor=0.466),
    headline("context_variance", "real-target", "contrastive", "understand", 0.341, 0.232, 0.45, 0.486),
    headline("mst", None, "mlm-head", "accuracy", 0.98, 0.95, 1.0, 0.5, floor=0.99),
]


@pytest.fixture
def closed():
    yield
    plt.close("all")


def test_the_overlap_check_sees_a_label_over_a_marker(closed):
    fig, ax = plt.subplots()
    ax.scatter([48.6], [0], marker="|", s=140, label="chance")
    ax.set_xlim(0, 100)
    ax.text(47.0, 0, "34.1", va="center")
    assert overlaps(fig) == ["text '34.1' overlaps the marker of 'chance'"]


def test_profile_figure_labels_clear_every_mark_and_each_other(closed):
    profile = Profile(model="minilm", kind="encoder", kind_reason="", settings={}, headline=ROWS)
    assert overlaps(profile_figure(profile)) == []


def test_per_group_chart_of_the_demo_sample_has_no_overlaps_and_no_none(closed):
    relations = {  # the demo's untuned run on the shipped sample: nine relations, acc@10
        "disease_has_abnormal_cell": 0.5556,
        "disease_has_associated_anatomic_site": 0.9,
        "disease_may_have_finding": 0.4,
        "gene_associated_with_disease": 0.4,
        "gene_encodes_gene_product": 1.0,
        "has_physiologic_effect": 0.4,
        "may_prevent": 0.1,
        "may_treat": 0.3,
        "occurs_after": 0.3333,
    }
    record = RunRecord(
        benchmark="medlama",
        dataset="out/medlama",
        config=None,
        split="test",
        prober="contrastive",
        model="minilm",
        seed=None,
        metrics={"acc@10": 0.4432, "macro_acc@10": 0.4432},
        per_group={name: {"acc@10": value} for name, value in relations.items()},
    )
    fig = per_group_figure(record, "acc@10")
    assert overlaps(fig) == []
    assert "None" not in fig.axes[0].get_title()
