"""Conformance of every built-in prober and task with the code it names (medprobe.registry).

The rules are medprobe.cli.plugin_kit.conformance's, shared with `medprobe plugin check DIST`, which runs
them on a plugin distribution's entries from the installed wheel (the models are evaluate's
tests/test_metric_common.py and BigBio's hub test): each rule here is one test per built-in entry of its
kind, on medprobe's own registry (`Registry.build(plugins=False)`: an installed plugin changes nothing
here). Beside them: the CLI's refusals as a user sees them, and a toy task and a toy prober defined here,
registered for one test: a new benchmark or prober is its module plus one registry entry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

import pytest

from medprobe import registry
from medprobe.cli import main
from medprobe.cli.plugin_kit.conformance import PROBER_RULES, TASK_RULES, VERB_CHECKS, Checker, flag_pattern
from medprobe.contracts import PROTOCOLS, Prober
from medprobe.registry import Option, ProberEntry, Registry, TaskEntry, using
from medprobe.tasks import Scored

BUILTINS = Registry.build(plugins=False)
# A task whose plan has no data of its own (licensed sources) runs on a conftest fixture named here.
LICENSED_DATA = {"disknE": "built_disknE"}  # benchmark -> fixture of a folder built from synthetic files


@pytest.fixture(scope="module")
def checker(tmp_path_factory) -> Checker:
    """The rules' checker on the built-ins: one tiny model per kind and each benchmark's tiny data, made once."""
    return Checker(BUILTINS, tmp_path_factory.mktemp("conformance"))


@pytest.mark.parametrize("rule", PROBER_RULES, ids=lambda rule: rule.name)
@pytest.mark.parametrize("name", BUILTINS.probers)
def test_every_builtin_prober_keeps_the_rule(checker, rule, name):
    checker.check(rule, name)


@pytest.mark.parametrize("rule", TASK_RULES, ids=lambda rule: rule.name)
@pytest.mark.parametrize("name", BUILTINS.tasks)
def test_every_builtin_task_keeps_the_rule(checker, rule, name, request):
    benchmark = BUILTINS.tasks[name].benchmark
    if benchmark in LICENSED_DATA and rule.name == "task-runs":
        checker.licensed_data[benchmark] = str(request.getfixturevalue(LICENSED_DATA[benchmark]))
    checker.check(rule, name)


def test_every_prober_kind_has_a_check_of_its_verbs():
    assert set(VERB_CHECKS) == set(PROTOCOLS), (
        "add a check of the new kind's verbs to medprobe.cli.plugin_kit.conformance.VERB_CHECKS"
    )


def test_a_rule_that_is_broken_says_which_and_how(checker):
    """The checker reports a broken rule as one line naming the entry, the rule and what is wrong."""
    wrong = registry.ProberEntry(**{**vars(BUILTINS.probers["mask-average"]), "kinds": ("ranking", "choice-scoring")})
    broken = Checker(BUILTINS.with_entries(wrong), checker.workdir)
    [failure] = broken.failures([(PROBER_RULES[0], "mask-average")])
    assert failure.line() == (
        "prober mask-average: breaks prober-class (the class is a medprobe.contracts.Prober with the entry's name and "
        "kinds and its own create): medprobe.lm.mask_average:MaskAverageProbe.kinds is ('ranking', 'candidate-scoring'), "
        "registered ('ranking', 'choice-scoring')"
    )


def help_text(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_mask_average_help_has_none_of_the_other_probers_options(capsys):
    text = help_text(["probe", "--prober", "mask-average", "--help"], capsys)
    for flag in ("--num-masks", "--similarity", "--rewire-corpus", "--beam-size", "--scorer", "--epochs"):
        assert not flag_pattern(flag).search(text), flag
    assert flag_pattern("--batch-size").search(text) and "(default: 64)" in text


def test_contrastive_with_num_masks_exits_2_naming_mask_predict_console():
    # as a user runs it: the exit status and stderr of the command, not of a function
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "medprobe.cli",
            "probe",
            "--prober",
            "contrastive",
            "--num-masks",
            "3",
            "--dataset",
            "d",
            "--model",
            "m",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done
    assert "--num-masks" in done.stderr and "--prober mask-predict" in done.stderr and "Traceback" not in done.stderr


# --- a toy task and a toy prober: one module + one registry entry each ----------------------------


class ToyTask:
    """Counts how often the prober's top-1 is the row's label: what the run loop calls (the rules ask for the whole Task contract)."""

    plot_metric = "hits"

    def __init__(self, limit: int | None = None):
        self.limit = limit
        self.timings: dict[str, float] = {}
        self.loaded: list = []
        self.subset_of = None

    def load(self, dataset: str, config: str | None, split: str):
        from datasets import load_dataset

        ds = load_dataset(dataset, config, split=split)
        return ds.select(range(min(self.limit, len(ds)))) if self.limit else ds

    def predict(self, prober, data, seed: int | None) -> list[str]:
        return [prober.rank([row["query"]], row["candidates"], k=1)[0][0][0] for row in data]  # the top (name, score)

    def score(self, data, outputs: list[str]) -> Scored:
        hits = sum(top == label for top, label in zip(outputs, data["label"]))
        return Scored(
            metrics={"hits": hits}, per_group={"all": {"hits": hits, "rows": len(outputs)}}, counts={"rows": len(outputs)}
        )

    def table(self, record) -> str:
        return f"toy: {record.metrics['hits']} hits"

    def writers(self, data, outputs) -> list:
        return []


class ToyProber(Prober):
    """Ranks the candidates alphabetically (or reversed): a RankingProber in ten lines."""

    name = "toy-alphabet"
    kinds = ("ranking",)

    def __init__(self, model: str, *, reverse: bool = False):
        self.model, self.reverse = model, reverse

    @classmethod
    def create(cls, model: str, *, device: str = "auto", seed: int | None = None, **options) -> ToyProber:
        return cls(model, **options)

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        return [[(name, -float(i)) for i, name in enumerate(sorted(candidates, reverse=self.reverse)[:k])] for _ in queries]


TOY_TASK = TaskEntry(
    "toy",
    f"{__name__}:ToyTask",
    "toy",
    "toy: top-1 equals the label",
    ("ranking",),
    "hits",
    options=(Option("--limit", "limit", "only the first N rows", type=registry.positive_int),),
)
TOY_PROBER = ProberEntry(
    "toy-alphabet",
    f"{__name__}:ToyProber",
    ("ranking",),
    "alphabetical order",
    "any string",
    "toy",
    options=(Option("--reverse", "reverse", "reverse alphabetical order", switch=True, default=False),),
)


@pytest.fixture
def toy_dataset(tmp_path) -> str:
    from datasets import Dataset

    rows = {
        "query": ["aspirin may treat [Y] .", "the disease is [Y] .", "ibuprofen might treat [Y] ."],
        "candidates": [["fever", "cough", "pain"], ["gout", "asthma"], ["pain", "fever"]],
        "label": ["cough", "asthma", "pain"],
    }
    (tmp_path / "toy" / "data").mkdir(parents=True)
    Dataset.from_dict(rows).to_parquet(str(tmp_path / "toy" / "data" / "test-00000-of-00001.parquet"))
    return str(tmp_path / "toy")


def test_a_toy_task_and_prober_run_with_one_registry_entry_each(toy_dataset, checker, tmp_path, capsys):
    from medprobe.run import RunRequest, run

    with using(BUILTINS.with_entries(TOY_TASK, TOY_PROBER)):
        # through the run loop, with the toy prober and with a real one
        record = run(RunRequest(task="toy", prober="toy-alphabet", dataset=toy_dataset, model="-", out=None), print_fn=print)
        assert record.metrics == {"hits": 2} and record.benchmark == "toy" and "toy: 2 hits" in capsys.readouterr().out
        real = run(
            RunRequest(
                task="toy",
                prober="mask-average",
                dataset=toy_dataset,
                model=checker.model("masked-lm"),
                device="cpu",
                task_options={"limit": 2},
                out=None,
            ),
            print_fn=lambda _: None,
        )
        assert real.per_group["all"]["rows"] == 2 and real.prober == "mask-average"
        assert sorted(real.source) == ["commit", "dirty", "version"] or sorted(real.source) == ["version"]  # no plugin: as before
        # through the CLI: the options of both are there, and the toy prober's default task is the toy task
        out = tmp_path / "toy.json"
        assert (
            main(["probe", "--prober", "toy-alphabet", "--dataset", toy_dataset, "--model", "-", "--reverse", "--out", str(out)])
            == 0
        )
        saved = json.loads(out.read_text())
        assert saved["metrics"] == {"hits": 1} and saved["benchmark"] == "toy" and saved["prober"] == "toy-alphabet"
        text = help_text(["probe", "--prober", "toy-alphabet", "--help"], capsys)
        assert flag_pattern("--reverse").search(text) and flag_pattern("--limit").search(text)
        assert "toy-alphabet" in help_text(["probe", "--help"], capsys)
        assert registry.tasks_for("toy-alphabet") == ["medlama", "toy"]
    # removed again: the CLI no longer knows them
    assert "toy" not in registry.registry().tasks and "toy-alphabet" not in registry.registry().probers
    with pytest.raises(SystemExit) as exited:
        main(["probe", "--prober", "toy-alphabet", "--dataset", toy_dataset, "--model", "-"])
    assert exited.value.code == 2
