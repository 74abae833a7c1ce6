"""Conformance of every registered prober and task with the code it names (medprobe.registry).

One set of checks that every entry of a kind must pass, parametrized over PROBERS and TASKS (the
models are evaluate's tests/test_metric_common.py and BigBio's hub test): the target imports; a
prober class is an api.Prober with the registry's name and kinds, its options' defaults are the
code's own defaults, and built through its `create` (`make_prober`) on a tiny random model it answers every verb
of its kinds with the documented shapes; a task's options match its class, its metric folder
loads, its builder's FEATURES hold its fields in every config, and a run reports its headline. The
CLI shows each prober's own options only and refuses a foreign one. Last, a toy task and a toy
prober defined here are registered for one test: a new benchmark or prober is its module plus one
registry entry.

Nothing here is kept per benchmark or per prober: a prober's tiny model is the model kind its profile
plans give it, its fast options are set by option name (FAST_OPTIONS); a task runs on the data its
profile plan uses without --data-dir (LICENSED_DATA names the fixture of a benchmark that has none).
So the entries a plugin installs (entry points medprobe.tasks, medprobe.probers) are checked too,
with no edit here: tests/test_plugins.py runs this file on a toy plugin.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest

from medprobe import registry
from medprobe.cli import main
from medprobe.cli.probe import probe_parser
from medprobe.contracts import PROTOCOLS, Prober
from medprobe.registry import Option, ProberEntry, TaskEntry, load, using
from medprobe.tasks import Scored

PROBERS, TASKS = registry.registry().probers, registry.registry().tasks

# --- probers: the entry against its class ---------------------------------------------------------


def option_signature(entry: ProberEntry, dest: str) -> inspect.Signature:
    """The signature that names the keyword `dest`: `create` (Prober.create, how every prober is built)
    when it does, else what it forwards its **options to (from_pretrained, then the class's __init__)."""
    cls = load(entry.target)
    chain = [cls.create, *([cls.from_pretrained] if hasattr(cls, "from_pretrained") else []), cls.__init__]
    signatures = [inspect.signature(function) for function in chain]
    return next((signature for signature in signatures if dest in signature.parameters), signatures[-1])


def same_value(a, b) -> bool:
    """Equal, reading a tuple as the list it shows as (`--k 1,10`)."""
    norm = lambda v: list(v) if isinstance(v, tuple) else v  # noqa: E731
    return norm(a) == norm(b) and type(norm(a)) is type(norm(b))


def common_flags() -> set[str]:
    """The options `medprobe probe` has for every prober and task (--dataset, --model, --seed, ...)."""
    return {flag for action in probe_parser(None, None)._actions for flag in action.option_strings}


@pytest.mark.parametrize("name", PROBERS)
def test_prober_class_is_an_api_prober_with_the_registry_name_and_kinds(name):
    entry = PROBERS[name]
    cls = load(entry.target)
    assert issubclass(cls, Prober), f"{entry.target} does not subclass medprobe.contracts.Prober"
    assert cls.name == name, f"{entry.target}.name is {cls.name!r}, registered as {name!r}"
    assert set(entry.kinds) <= set(PROTOCOLS), f"unknown kinds {set(entry.kinds) - set(PROTOCOLS)}"
    assert entry.default_task in TASKS and set(entry.kinds) & set(TASKS[entry.default_task].accepts)
    assert "create" in vars(cls) or any("create" in vars(base) for base in cls.__mro__[1:] if base is not Prober), (
        f"{entry.target} has no create(model, *, device, seed, **options) of its own (Prober.create only raises)"
    )
    create = inspect.signature(cls.create).parameters
    for keyword in ("device", "seed"):  # the one construction call: create(model, *, device=..., seed=..., **options)
        assert create.get(keyword) and create[keyword].kind is inspect.Parameter.KEYWORD_ONLY, f"{entry.target}.create: {keyword}"
    assert tuple(cls.kinds) == tuple(entry.kinds), f"{entry.target}.kinds is {cls.kinds}, registered {entry.kinds}"


@pytest.mark.parametrize("name", PROBERS)
def test_prober_option_defaults_are_the_code_defaults(name):
    entry = PROBERS[name]
    for option in entry.options:
        parameters = option_signature(entry, option.dest).parameters
        assert option.dest in parameters, f"{option.flag} passes {option.dest}=, which {entry.target}.create does not take"
        code = parameters[option.dest].default
        assert code is not inspect.Parameter.empty, f"{option.flag}: {option.dest} has no default in {entry.target}"
        assert same_value(option.default, code), f"{option.flag}: the registry shows {option.default!r}, the code uses {code!r}"


def options_in_one_parser(prober: str) -> list[tuple[str, list[Option]]]:
    """(task, options) of every parser `medprobe probe --prober <prober> --task <task>` builds."""
    return [(task, [*PROBERS[prober].options, *TASKS[task].options]) for task in registry.tasks_for(prober)]


@pytest.mark.parametrize("name", PROBERS)
def test_no_two_options_share_a_flag_or_a_destination(name):
    # a shared dest would hand one value to both the prober and the task (the CLI splits by dest)
    common = common_flags()
    for task, options in options_in_one_parser(name):
        flags = [o.flag for o in options]
        dests = [o.dest for o in options]
        assert len(set(flags)) == len(flags), f"{name} with {task}: a flag twice in {flags}"
        assert len(set(dests)) == len(dests), f"{name} with {task}: a destination twice in {dests}"
        assert not common & set(flags), f"{name} with {task}: {common & set(flags)} shadow a common option"
        for option in options:
            assert option.flag.startswith("--") and option.help, option
            if option.choices and option.default is not None:
                assert option.default in option.choices, option


# --- probers on tiny random models ----------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Tiny models spend their time synchronising threads; on a shared 2-core machine one thread is faster."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_folders(tmp_path_factory) -> dict[str, str]:
    """One saved model folder per model kind, as `--model` takes it."""
    from tiny_bert import save_tiny_bert
    from tiny_models import byte_bpe_tokenizer, tiny_random_bert_mlm, tiny_random_gpt2, tiny_random_t5

    root = tmp_path_factory.mktemp("tiny_models")
    folders = {"encoder": str(save_tiny_bert(root / "encoder", layers=2))}
    for kind, (model, tokenizer) in {
        "masked-lm": tiny_random_bert_mlm(max_position_embeddings=512),  # context-variance texts are long
        "seq2seq": tiny_random_t5(),
        "causal-lm": (tiny_random_gpt2(byte_bpe_tokenizer()), byte_bpe_tokenizer()),
    }.items():
        model.save_pretrained(root / kind)
        tokenizer.save_pretrained(root / kind)
        folders[kind] = str(root / kind)
    return folders


# Options that keep a prober fast on a tiny model, by option name: every prober (a plugin's too) that has
# such an option gets this value, so a new prober needs no line here.
FAST_OPTIONS = {
    "batch_size": 4,
    "num_masks": 2,
    "beam_size": 2,
    "max_iter": 1,
    "num_return": 2,
    "max_new_tokens": 3,
    "epochs": 1,
    "max_length": 32,
    "train_batch_size": 2,
    "eval_batch_size": 4,
}


def tiny_kind(name: str) -> str:
    """The tiny model a prober is built on: the first model kind a profile plan gives it, else a masked LM
    (an encoder with a masked-LM head: what an encoder's and a masked LM's probers both take)."""
    from medprobe.profiling.plan import KIND_NAMES, profiled

    planned = [kind for kind in KIND_NAMES if any(name in entry.profile.probers.get(kind, ()) for entry in profiled())]
    return planned[0] if planned else "masked-lm"


def tiny_setup(name: str) -> tuple[str, dict]:
    """(the tiny model kind, the fast options) of a registered prober, read from the registry."""
    return tiny_kind(name), {o.dest: FAST_OPTIONS[o.dest] for o in PROBERS[name].options if o.dest in FAST_OPTIONS}


QUERIES = ["aspirin may treat [Y] .", "the gene has [Y] , the disease is alpha ."]
CANDIDATES = ["fever", "heart failure", "cough", "renal failure", "pain"]


def check_ranking(prober, candidates_scored: bool) -> None:
    ranked = prober.rank(QUERIES, CANDIDATES, k=3)
    assert isinstance(ranked, list) and len(ranked) == len(QUERIES)
    for names in ranked:
        assert all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names) <= 3, names
        if candidates_scored:  # a scorer ranks the candidates given, k of them; generators may return fewer
            assert len(names) == 3 and set(names) <= set(CANDIDATES), names


def check_candidate_scoring(prober) -> None:
    lists = [CANDIDATES, CANDIDATES[::-1][:3]]
    scores = prober.score_candidates(QUERIES, lists)
    assert isinstance(scores, list) and len(scores) == len(QUERIES)
    for names, row in zip(lists, scores):
        row = np.asarray(row)
        assert row.shape == (len(names),) and np.issubdtype(row.dtype, np.floating) and np.isfinite(row).all(), row
    if isinstance(prober, PROTOCOLS["ranking"]):  # a scorer's ranking is its scores' order (ties: candidate order)
        from medprobe.lm.candidate_scoring import top_k

        full = prober.score_candidates(QUERIES, [CANDIDATES] * 2)
        assert prober.rank(QUERIES, CANDIDATES, k=3) == [top_k(CANDIDATES, np.asarray(row), 3) for row in full]


def check_choice_scoring(prober) -> None:
    texts = ["aspirin may treat [MASK] .", "the disease is heart [MASK] .", "ibuprofen might treat [MASK] ."]
    choices = [["fever", "cough"], ["failure", "attack", "pain"], ["pain", "fever"]]
    report = prober.fit(texts, choices, [0, 0, 1])
    assert isinstance(report, dict)
    scores = prober.score_choices(texts, choices)
    assert [len(row) for row in scores] == [2, 3, 2] and all(np.isfinite(s) for row in scores for s in row)


def check_disease_classification(prober) -> None:
    import datasets

    from medprobe.tasks.disknE_splits import DiseaseSplits

    rows = 8
    ds = datasets.Dataset.from_dict(
        {
            "premise": ["the patient has a cough and fever ."] * rows,
            "hypothesis": ["asthma", "gout"] * (rows // 2),
            "full_hypothesis": ["the patient has asthma .", "the patient has gout ."] * (rows // 2),
            "label": [1, 0] * (rows // 2),
        }
    )
    encoded = prober.encode(ds)
    assert len(encoded) == rows and {"input_ids", "labels"} <= set(encoded.column_names)
    splits = DiseaseSplits(
        cui="C0004096", name="asthma", category=None, train=[0, 1, 2, 3], validation=[4, 5], test=[6, 7], test_positives=1
    )
    result = prober.run_disease(encoded, splits, seed=0)
    assert list(result.references) == [1, 0] and len(result.predictions) == 2 and set(result.predictions) <= {0, 1}


VERB_CHECKS = {
    "ranking": lambda prober, entry: check_ranking(prober, "candidate-scoring" in entry.kinds),
    "candidate-scoring": lambda prober, entry: check_candidate_scoring(prober),
    "choice-scoring": lambda prober, entry: check_choice_scoring(prober),
    "disease-classification": lambda prober, entry: check_disease_classification(prober),
}


def test_every_prober_kind_has_a_check_of_its_verbs():
    assert set(VERB_CHECKS) == set(PROTOCOLS), "add a check of the new kind's verbs to VERB_CHECKS"


@pytest.mark.parametrize("name", PROBERS)
def test_prober_built_by_make_prober_answers_every_verb_of_its_kinds_tiny_random_models(name, tiny_folders):
    from medprobe.run import make_prober

    entry = PROBERS[name]
    kind, options = tiny_setup(name)
    prober = make_prober(name, tiny_folders[kind], device="cpu", seed=0, options=options)
    for protocol in entry.kinds:
        assert isinstance(prober, PROTOCOLS[protocol]), f"{name} does not implement {protocol}"
    assert type(prober) is load(entry.target)
    assert isinstance(prober.settings, dict) and isinstance(prober.timings, dict)
    for protocol in entry.kinds:
        VERB_CHECKS[protocol](prober, entry)


# --- tasks: the entry against its class, metric and builder ---------------------------------------


@pytest.mark.parametrize("name", TASKS)
def test_task_option_defaults_are_the_class_defaults(name):
    entry = TASKS[name]
    cls = load(entry.target)
    parameters = inspect.signature(cls.__init__).parameters
    for option in entry.options:
        assert option.dest in parameters, f"{option.flag} passes {option.dest}=, which {entry.target} does not take"
        code = parameters[option.dest].default
        assert code is not inspect.Parameter.empty, f"{option.flag}: {option.dest} has no default in {entry.target}"
        assert same_value(option.default, code), f"{option.flag}: the registry shows {option.default!r}, the class uses {code!r}"
    task = cls()  # every option has a default: the task runs without any
    for method in ("load", "predict", "score", "table", "writers"):
        assert callable(getattr(task, method, None)), f"{entry.target} has no {method}"
    assert isinstance(task.plot_metric, str) and isinstance(task.timings, dict)
    assert cls.FIELDS and cls.METRIC and cls.GROUP_BY, f"{entry.target}: declare what it reads, its metric, its groups"
    assert set(entry.accepts) <= set(PROTOCOLS) and any(set(p.kinds) & set(entry.accepts) for p in PROBERS.values())
    for option in entry.options:  # `publish results` names a subset in the model card with these words
        if option.subset:
            assert option.subset_text.count("{}") == 1, f"{option.flag} makes a subset: give it a subset_text with one {{}}"


@pytest.mark.parametrize("name", TASKS)
def test_task_metric_folder_loads(name):
    import evaluate

    from medprobe.resources import metric_path

    metric = evaluate.load(metric_path(load(TASKS[name].target).METRIC))
    assert metric.name and metric.inputs_description


def builder_features(benchmark: str) -> dict[str, set[str]]:
    """Per BUILDER_CONFIG of datasets/<benchmark>/<benchmark>.py: the field names of its _info()."""
    from medprobe.building.build import builder_class

    cls = builder_class(benchmark)
    configs = cls.BUILDER_CONFIGS or [cls.BUILDER_CONFIG_CLASS(name="default")]
    return {config.name: set(cls._info(SimpleNamespace(config=config)).features) for config in configs}


@pytest.mark.parametrize("name", TASKS)
def test_builder_features_hold_the_task_fields_in_every_config(name):
    entry = TASKS[name]
    per_config = builder_features(entry.benchmark)
    assert per_config, f"datasets/{entry.benchmark} has no builder config"
    for config, fields in per_config.items():
        missing = set(load(entry.target).FIELDS) - fields
        assert not missing, f"{entry.benchmark}/{config} has no field {', '.join(sorted(missing))} that task {name} reads"


# A task's tiny run, read from the registry: the data its profile plan uses without --data-dir (the
# shipped sample, or a small build of its builder's default source), the plan's first config and its
# first prober (on that prober's tiny model), and the plan's --quick options made smaller still. A
# task whose plan has no data of its own (licensed sources) runs on a conftest fixture named here.
LICENSED_DATA = {"disknE": "built_disknE"}  # benchmark -> fixture of a folder built from synthetic files
TINY_TASK_OPTIONS = {"per_relation": 2, "seeds": 1, "diseases": 1}  # by option name, over the plan's quick options
TINY_BUILD = {"train_size": 12, "validation_size": 3, "test_size": 8}  # by parameter name, over the quick build's


@dataclass(frozen=True)
class TaskRun:
    config: str | None
    prober: str
    task_options: dict


def task_run(name: str) -> TaskRun:
    from medprobe.profiling.plan import KIND_NAMES

    entry = TASKS[name]
    plan = entry.profile
    assert plan is not None, f"task {name} has no profile plan: give it one, or its data in LICENSED_DATA and a run here"
    prober = next(p for kind in KIND_NAMES for p in plan.probers.get(kind, ()))
    quick = plan.quick.get("task", {})
    own = {option.dest for option in entry.options}
    options = {**quick, **{dest: value for dest, value in TINY_TASK_OPTIONS.items() if dest in own}}
    return TaskRun(plan.configs[0], prober, options)


@pytest.fixture(scope="module")
def task_data(request, tmp_path_factory):
    """benchmark -> (dataset folder, config) of a task's tiny run, built once per module."""
    from medprobe.building.build import build, config_names
    from medprobe.profiling.plan import sample_folder

    found: dict[str, tuple[str, str | None]] = {}

    def data(name: str) -> tuple[str, str | None]:
        entry = TASKS[name]
        plan, config = entry.profile, task_run(name).config
        if entry.benchmark in found:
            return found[entry.benchmark]
        if plan.without_data == "sample":
            found[entry.benchmark] = (str(sample_folder(plan)), config)
        elif plan.without_data == "build":
            config = config or config_names(entry.benchmark)[0]  # the task's own choice would be every config
            params = {key: TINY_BUILD.get(key, value) for key, value in plan.quick.get("build", {}).items()}
            out = tmp_path_factory.mktemp(f"{entry.benchmark}_conformance") / "hub"
            build(entry.benchmark, out, configs=[config], params=params)
            found[entry.benchmark] = (str(out), config)
        else:
            assert entry.benchmark in LICENSED_DATA, f"{name}: its plan has no data; add a fixture of its data to LICENSED_DATA"
            found[entry.benchmark] = (str(request.getfixturevalue(LICENSED_DATA[entry.benchmark])), config)
        return found[entry.benchmark]

    return data


def documented_outputs(metric: str) -> str:
    """The metric module's documentation of what it returns (its inputs_description and card)."""
    from pathlib import Path

    import evaluate

    from medprobe.resources import metric_path

    card = Path(metric_path(metric)) / "README.md"
    return evaluate.load(metric_path(metric)).inputs_description + (card.read_text(encoding="utf-8") if card.is_file() else "")


def task_documentation(entry: TaskEntry) -> str:
    cls = load(entry.target)
    return f"{sys.modules[cls.__module__].__doc__ or ''}\n{cls.__doc__ or ''}\n{entry.description}"


@pytest.mark.parametrize("name", TASKS)
def test_task_grouping_and_headline_are_documented(name):
    entry = TASKS[name]
    cls = load(entry.target)
    words = lambda text, word: re.search(rf"(?<![\w@]){re.escape(word)}(?![\w@])", text)  # noqa: E731
    assert cls.GROUP_BY in cls.FIELDS or words(task_documentation(entry), cls.GROUP_BY), (
        f"{name} groups by {cls.GROUP_BY!r}: neither a field it reads nor named in {entry.target}'s documentation"
    )
    headline = re.sub(r"\d+$", "k", entry.headline)  # acc@10 is documented as acc@k
    documented = task_documentation(entry) + documented_outputs(cls.METRIC)
    assert words(documented, entry.headline) or words(documented, headline), (
        f"{name}'s headline {entry.headline!r} is documented neither by {entry.target} nor by the {cls.METRIC} metric"
    )


@pytest.mark.parametrize("name", TASKS)
def test_task_runs_and_reports_its_headline_and_groups_tiny_random_models(name, tiny_folders, task_data, tmp_path):
    """A real run through medprobe.run.run: the headline is a key of the metrics it reports, the
    floor (if any) a key of every group, and the record names the task's benchmark."""
    from medprobe.run import RunRequest, run

    entry = TASKS[name]
    planned = task_run(name)
    prober, task_options = planned.prober, planned.task_options
    assert set(PROBERS[prober].kinds) & set(entry.accepts)
    dataset, config = task_data(name)
    kind, options = tiny_setup(prober)
    record = run(
        RunRequest(
            task=name,
            prober=prober,
            dataset=str(dataset),
            config=config,
            model=tiny_folders[kind],
            seed=0,
            device="cpu",
            prober_options=options,
            task_options=task_options,
            out=str(tmp_path / "r.json"),
        ),
        print_fn=lambda text: None,
    )
    assert entry.headline in record.metrics, f"{name}: headline {entry.headline!r} not in {sorted(record.metrics)}"
    assert record.per_group and record.benchmark == entry.benchmark
    cls = load(entry.target)
    if cls.GROUP_BY in cls.FIELDS:  # the groups are values of that field
        from datasets import load_dataset

        values = set(load_dataset(str(dataset), config, split="test")[cls.GROUP_BY])
        assert set(record.per_group) <= values, f"{name}: groups {sorted(record.per_group)} are not {cls.GROUP_BY} values"
    # every headline is reportable: its 95% interval with n, and its chance level
    assert entry.headline in record.intervals and record.intervals[entry.headline]["n"] > 0
    assert record.intervals[entry.headline]["low"] <= record.metrics[entry.headline] <= record.intervals[entry.headline]["high"]
    assert entry.headline in record.chance and 0 <= record.chance[entry.headline]["value"] <= 1
    # and says what it measured, and whom to cite
    assert record.data_fingerprint["sha256"] and record.subset["items"] == record.intervals[entry.headline]["n"]
    if any(option.subset and option.dest in task_options for option in entry.options):  # what of what it kept, for publish
        kept = record.subset["of"]
        assert record.subset["subset"] and 0 < kept["probed"] < kept["total"] and kept["unit"], record.subset
    assert record.model_identity["weights_sha256"] and record.command.startswith(f"medprobe probe --prober {prober} ")
    assert set(entry.citations) <= set(record.citations) and record.citations[-1] == "medprobe"
    assert json.loads((tmp_path / "r.json").read_text())["metrics"] == json.loads(json.dumps(record.metrics))


# --- the CLI: each prober's own options only ------------------------------------------------------


def flag_pattern(flag: str) -> re.Pattern:
    return re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w-])")


def help_text(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", PROBERS)
def test_probe_help_lists_the_prober_and_task_options_and_no_other(name, capsys):
    all_flags = {o.flag for e in [*PROBERS.values(), *TASKS.values()] for o in e.options}
    for task in registry.tasks_for(name):
        text = help_text(["probe", "--prober", name, "--task", task, "--help"], capsys)
        own = {o.flag for o in [*PROBERS[name].options, *TASKS[task].options]}
        for flag in own:
            assert flag_pattern(flag).search(text), f"--prober {name} --task {task} --help does not list {flag}"
        foreign = [flag for flag in all_flags - own if flag_pattern(flag).search(text)]
        assert not foreign, f"--prober {name} --task {task} --help lists {foreign} of other probers or tasks"


def test_mask_average_help_has_none_of_the_other_probers_options(capsys):
    text = help_text(["probe", "--prober", "mask-average", "--help"], capsys)
    for flag in ("--num-masks", "--similarity", "--rewire-corpus", "--beam-size", "--scorer", "--epochs"):
        assert not flag_pattern(flag).search(text), flag
    assert flag_pattern("--batch-size").search(text) and "(default: 64)" in text


@pytest.mark.parametrize("name", PROBERS)
def test_a_foreign_option_exits_2_naming_its_owner(name, capsys):
    task = PROBERS[name].default_task
    own = {o.flag for o in [*PROBERS[name].options, *TASKS[task].options]}
    owners: dict[str, list[str]] = {}
    for kind, entries in (("--prober", PROBERS), ("--task", TASKS)):
        for owner, entry in entries.items():
            for option in entry.options:
                owners.setdefault(option.flag, []).append(f"{kind} {owner}")
    foreign = sorted(set(owners) - own)
    assert foreign
    for flag in foreign:
        with pytest.raises(SystemExit) as exited:
            main(["probe", "--prober", name, flag, "3", "--dataset", "d", "--model", "m"])
        assert exited.value.code == 2, flag
        error = capsys.readouterr().err
        assert flag_pattern(flag).search(error) and all(o in error for o in owners[flag]), error


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
    """Counts how often the prober's top-1 is the row's label (a task is these five methods)."""

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
        return [prober.rank([row["query"]], row["candidates"], k=1)[0][0] for row in data]

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

    def rank(self, queries: Sequence[str], candidates: Sequence[str], k: int) -> list[list[str]]:
        return [sorted(candidates, reverse=self.reverse)[:k] for _ in queries]


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


def test_a_toy_task_and_prober_run_with_one_registry_entry_each(toy_dataset, tiny_folders, tmp_path, monkeypatch, capsys):
    from medprobe.run import RunRequest, run

    with using(registry.registry().with_entries(TOY_TASK, TOY_PROBER)):
        # through the run loop, with the toy prober and with a real one
        record = run(RunRequest(task="toy", prober="toy-alphabet", dataset=toy_dataset, model="-", out=None), print_fn=print)
        assert record.metrics == {"hits": 2} and record.benchmark == "toy" and "toy: 2 hits" in capsys.readouterr().out
        real = run(
            RunRequest(
                task="toy",
                prober="mask-average",
                dataset=toy_dataset,
                model=tiny_folders["masked-lm"],
                device="cpu",
                task_options={"limit": 2},
                out=None,
            ),
            print_fn=lambda _: None,
        )
        assert real.per_group["all"]["rows"] == 2 and real.prober == "mask-average"
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
