"""The rules every registry entry keeps, a built-in's or a plugin's, and the checker that runs them.

    checker = Checker(Registry.build(points), workdir)   # the registry checked, tiny models and data made there
    checker.check(rule, "toy")                           # raises Broken (the rule is not kept) or Skipped
    failures = checker.failures(rules_of(entries))       # every rule on these entries; each Failure is one line

Each rule is one `Rule` (a name, what it says, the check): a prober's class is a
medprobe.contracts.Prober with the entry's name and kinds, its options' defaults are the code's, built on
a tiny random model (medprobe.cli.plugin_kit.tiny) it answers every verb of its kinds, `medprobe probe`
shows its options only and refuses a foreign one; a task keeps the `Task` contract (medprobe.tasks), its
metric folder loads, its builder's features hold its fields, its groups and headline are documented,
and a run on tiny models reports the headline with its interval and chance; every entry's citations
are BibTeX medprobe can print. Nothing is kept per benchmark or prober: a prober's tiny model is the
model kind its profile plans give it, its fast options are set by option name (FAST_OPTIONS), a task
runs on the data its profile plan uses without --data-dir. tests/test_registry_conformance.py runs the
rules on the built-ins, `medprobe plugin check DIST` on an installed distribution's entries.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from medprobe.contracts import PROTOCOLS, Prober, UserError, is_real
from medprobe.registry import Option, ProberEntry, Registry, TaskEntry, load, using


class Broken(Exception):
    """An entry breaks a rule; the message says how."""


class Skipped(Exception):
    """A rule that cannot be checked here (e.g. a task whose data is licensed); the message says why."""


def require(condition: Any, message: str) -> None:
    if not condition:
        raise Broken(message)


@dataclass(frozen=True)
class Rule:
    name: str  # short, for a failure line and a test id: "prober-verbs"
    says: str  # the rule in words
    kind: str  # "task" or "prober": the entries it applies to
    check: Callable[[Checker, Any], None]


@dataclass(frozen=True)
class Failure:
    entry: str  # "task toy", "prober toy-order", or the distribution when its entries do not register
    rule: str
    says: str
    message: str

    def line(self) -> str:
        """One line: the entry, the rule it breaks and how."""
        return " ".join(f"{self.entry}: breaks {self.rule} ({self.says}): {self.message}".split())


def load_target(target: str) -> Any:
    try:
        return load(target)
    except Exception as err:  # noqa: BLE001 - whatever the target raises is the finding
        raise Broken(f"{target} does not import: {type(err).__name__}: {err}") from err


# --- the checker: what the rules share ------------------------------------------------------------------

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
TINY_TASK_OPTIONS = {"per_relation": 2, "seeds": 1, "diseases": 1}  # by option name, over the plan's quick options
TINY_BUILD = {"train_size": 12, "validation_size": 3, "test_size": 8}  # by parameter name, over the quick build's


@dataclass
class Checker:
    """The registry the rules check, and what they make once in `workdir`: a tiny model per kind, each
    benchmark's tiny data. `licensed_data` gives the folder of a benchmark whose plan has no data of its own."""

    registry: Registry
    workdir: Path
    licensed_data: dict[str, str] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    data: dict[str, tuple[str, str | None]] = field(default_factory=dict)

    def check(self, rule: Rule, name: str) -> None:
        """Check one rule on the entry `name` of its kind, with this registry as medprobe's (Broken, Skipped)."""
        entries = self.registry.tasks if rule.kind == "task" else self.registry.probers
        quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())  # runs, progress bars
        with using(self.registry), one_torch_thread(), quiet[0], quiet[1]:
            rule.check(self, entries[name])

    def failures(self, rules: list[tuple[Rule, str]], on_each: Callable[[str], None] = lambda line: None) -> list[Failure]:
        """Every (rule, entry name) checked; what is broken, one Failure each (anything a check raises counts)."""
        found = []
        for rule, name in rules:
            try:
                self.check(rule, name)
            except Skipped as why:
                on_each(f"{rule.kind} {name}: {rule.name} not checked: {why}")
            except Exception as err:  # noqa: BLE001 - a crash of the plugin's code is a finding, not the checker's
                message = str(err) if isinstance(err, (Broken, UserError)) else f"{type(err).__name__}: {err}"
                found.append(Failure(f"{rule.kind} {name}", rule.name, rule.says, message))
                on_each(found[-1].line())
            else:
                on_each(f"{rule.kind} {name}: {rule.name} kept")
        return found

    def model(self, kind: str) -> str:
        """A tiny random model of `kind` (medprobe.models.model_kind), saved once."""
        if kind not in self.models:
            from medprobe.cli.plugin_kit.tiny import save_tiny_model

            self.models[kind] = save_tiny_model(kind, self.workdir / "models" / kind)
        return self.models[kind]

    def task_data(self, entry: TaskEntry) -> tuple[str, str | None]:
        """(dataset folder, config) of a task's tiny run: the data its profile plan uses without --data-dir (the
        shipped sample, or a small build of its builder's default source), else `licensed_data`."""
        from medprobe.building.build import build, config_names
        from medprobe.profiling.plan import sample_folder

        plan, config = entry.profile, task_run(entry).config
        if entry.benchmark not in self.data:
            if plan.without_data == "sample":
                self.data[entry.benchmark] = (str(sample_folder(plan)), config)
            elif plan.without_data == "build":
                config = config or config_names(entry.benchmark)[0]  # the task's own choice would be every config
                params = {key: TINY_BUILD.get(key, value) for key, value in plan.quick.get("build", {}).items()}
                out = self.workdir / "data" / entry.benchmark
                build(entry.benchmark, out, configs=[config], params=params, overwrite=True)
                self.data[entry.benchmark] = (str(out), config)
            elif entry.benchmark in self.licensed_data:
                self.data[entry.benchmark] = (self.licensed_data[entry.benchmark], config)
            else:
                raise Skipped(f"its profile plan has no data of its own ({plan.data_text or 'without_data=skip'})")
        return self.data[entry.benchmark]


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Tiny models spend their time synchronising threads; on a shared 2-core machine one thread is faster."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# --- probers: the entry against its class ---------------------------------------------------------


def prober_class(checker: Checker, entry: ProberEntry) -> None:
    cls = load_target(entry.target)
    require(inspect.isclass(cls) and issubclass(cls, Prober), f"{entry.target} does not subclass medprobe.contracts.Prober")
    require(cls.name == entry.name, f"{entry.target}.name is {cls.name!r}, registered as {entry.name!r}")
    require(set(entry.kinds) <= set(PROTOCOLS), f"unknown kinds {sorted(set(entry.kinds) - set(PROTOCOLS))}")
    tasks = checker.registry.tasks
    fits = entry.default_task in tasks and set(entry.kinds) & set(tasks[entry.default_task].accepts)
    require(fits, f"its default_task {entry.default_task!r} is no registered task that takes {', '.join(entry.kinds)}")
    own = "create" in vars(cls) or any("create" in vars(base) for base in cls.__mro__[1:] if base is not Prober)
    require(own, f"{entry.target} has no create(model, *, device, seed, **options) of its own (Prober.create only raises)")
    create = inspect.signature(cls.create).parameters
    for keyword in ("device", "seed"):  # the one construction call: create(model, *, device=..., seed=..., **options)
        given = create.get(keyword)
        require(given and given.kind is inspect.Parameter.KEYWORD_ONLY, f"{entry.target}.create takes no keyword-only {keyword}")
    require(tuple(cls.kinds) == tuple(entry.kinds), f"{entry.target}.kinds is {cls.kinds}, registered {entry.kinds}")


def option_signature(cls: type, dest: str) -> inspect.Signature:
    """The signature that names the keyword `dest`: `create` (Prober.create, how every prober is built)
    when it does, else what it forwards its **options to (from_pretrained, then the class's __init__)."""
    chain = [cls.create, *([cls.from_pretrained] if hasattr(cls, "from_pretrained") else []), cls.__init__]
    signatures = [inspect.signature(function) for function in chain]
    return next((signature for signature in signatures if dest in signature.parameters), signatures[-1])


def same_value(a: Any, b: Any) -> bool:
    """Equal, reading a tuple as the list it shows as (`--k 1,10`)."""
    norm = lambda v: list(v) if isinstance(v, tuple) else v  # noqa: E731
    return norm(a) == norm(b) and type(norm(a)) is type(norm(b))


def check_defaults(options: tuple[Option, ...], signature_of: Callable[[str], inspect.Signature], target: str) -> None:
    for option in options:
        parameters = signature_of(option.dest).parameters
        require(option.dest in parameters, f"{option.flag} passes {option.dest}=, which {target} does not take")
        code = parameters[option.dest].default
        require(code is not inspect.Parameter.empty, f"{option.flag}: {option.dest} has no default in {target}")
        require(same_value(option.default, code), f"{option.flag}: the entry shows {option.default!r}, the code uses {code!r}")


def prober_option_defaults(checker: Checker, entry: ProberEntry) -> None:
    cls = load_target(entry.target)
    check_defaults(entry.options, lambda dest: option_signature(cls, dest), f"{entry.target}.create")


def common_flags() -> set[str]:
    """The options `medprobe probe` has for every prober and task (--dataset, --model, --seed, ...)."""
    from medprobe.cli.probe import probe_parser

    return {flag for action in probe_parser(None, None)._actions for flag in action.option_strings}


def prober_options_distinct(checker: Checker, entry: ProberEntry) -> None:
    # a shared dest would hand one value to both the prober and the task (the CLI splits by dest)
    common = common_flags()
    for task in checker.registry.tasks_for(entry.name):
        options = [*entry.options, *checker.registry.tasks[task].options]
        flags, dests = [o.flag for o in options], [o.dest for o in options]
        require(len(set(flags)) == len(flags), f"with task {task}: a flag twice in {flags}")
        require(len(set(dests)) == len(dests), f"with task {task}: a destination twice in {dests}")
        require(not common & set(flags), f"with task {task}: {sorted(common & set(flags))} shadow a common option of probe")
        for option in options:
            require(option.flag.startswith("--") and option.help, f"{option.flag}: a flag starts with -- and has a help")
            if option.choices and option.default is not None:
                require(option.default in option.choices, f"{option.flag}: its default {option.default!r} is not a choice")


# --- probers on tiny random models ----------------------------------------------------------------

QUERIES = ["aspirin may treat [Y] .", "the gene has [Y] , the disease is alpha ."]
CANDIDATES = ["fever", "heart failure", "cough", "renal failure", "pain"]


def check_ranking(prober: Any, candidates_scored: bool) -> None:
    import math

    ranked = prober.rank(QUERIES, CANDIDATES, k=3)
    require(isinstance(ranked, list) and len(ranked) == len(QUERIES), f"rank gave {ranked!r}: one list per query")
    for row in ranked:  # the contract: (name, score) pairs, best first (medprobe.contracts.RankingProber)
        pairs = all(isinstance(p, (tuple, list)) and len(p) == 2 and isinstance(p[0], str) and is_real(p[1]) for p in row)
        require(pairs, f"rank gave {row!r}: (name, score) pairs (plain names leave the confidence facets out)")
        names, scores = [name for name, _ in row], [float(score) for _, score in row]
        valid = all(names) and len(set(names)) == len(names) <= 3
        require(valid, f"rank gave {names!r}: up to k distinct names")
        require(all(map(math.isfinite, scores)), f"rank gave the scores {scores}: finite numbers")
        require(scores == sorted(scores, reverse=True), f"rank gave the scores {scores}: best first, higher is better")
        if getattr(prober, "probabilities", False):  # log-probabilities: exp(score) is a probability
            require(all(score <= 1e-6 for score in scores), f"rank gave the log-probabilities {scores}: none above 0")
        if candidates_scored:  # a scorer ranks the candidates given, k of them; generators may return fewer
            require(len(names) == 3 and set(names) <= set(CANDIDATES), f"rank gave {names!r}: k of the candidates")


def check_candidate_scoring(prober: Any) -> None:
    import numpy as np

    lists = [CANDIDATES, CANDIDATES[::-1][:3]]
    scores = prober.score_candidates(QUERIES, lists)
    require(isinstance(scores, list) and len(scores) == len(QUERIES), "score_candidates gives one row per query")
    for names, row in zip(lists, scores):
        row = np.asarray(row)
        finite = row.shape == (len(names),) and np.issubdtype(row.dtype, np.floating) and np.isfinite(row).all()
        require(finite, f"score_candidates gave {row!r}: one finite float per candidate")
    if isinstance(prober, PROTOCOLS["ranking"]):  # a scorer's ranking is its scores' order (ties: candidate order)
        from medprobe.lm.candidate_scoring import top_k

        full = prober.score_candidates(QUERIES, [CANDIDATES] * 2)
        expected = [top_k(CANDIDATES, np.asarray(row), 3) for row in full]
        names = [[name for name, _ in row] for row in prober.rank(QUERIES, CANDIDATES, k=3)]
        require(names == expected, "rank is not the order of score_candidates")


def check_choice_scoring(prober: Any) -> None:
    import numpy as np

    texts = ["aspirin may treat [MASK] .", "the disease is heart [MASK] .", "ibuprofen might treat [MASK] ."]
    choices = [["fever", "cough"], ["failure", "attack", "pain"], ["pain", "fever"]]
    require(isinstance(prober.fit(texts, choices, [0, 0, 1]), dict), "fit returns a dict (its report)")
    scores = prober.score_choices(texts, choices)
    shaped = [len(row) for row in scores] == [2, 3, 2] and all(np.isfinite(s) for row in scores for s in row)
    require(shaped, f"score_choices gave {scores!r}: one finite score per choice")


def check_disease_classification(prober: Any) -> None:
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
    require(
        len(encoded) == rows and {"input_ids", "labels"} <= set(encoded.column_names), "encode keeps rows, adds input_ids, labels"
    )
    splits = DiseaseSplits(
        cui="C0004096", name="asthma", category=None, train=[0, 1, 2, 3], validation=[4, 5], test=[6, 7], test_positives=1
    )
    result = prober.run_disease(encoded, splits, seed=0)
    valid = list(result.references) == [1, 0] and len(result.predictions) == 2 and set(result.predictions) <= {0, 1}
    require(valid, f"run_disease gave {result!r}: the test references and 0/1 predictions")


VERB_CHECKS: dict[str, Callable[[Any, ProberEntry], None]] = {
    "ranking": lambda prober, entry: check_ranking(prober, "candidate-scoring" in entry.kinds),
    "candidate-scoring": lambda prober, entry: check_candidate_scoring(prober),
    "choice-scoring": lambda prober, entry: check_choice_scoring(prober),
    "disease-classification": lambda prober, entry: check_disease_classification(prober),
}


def tiny_kind(name: str) -> str:
    """The tiny model a prober is built on: the first model kind a profile plan gives it, else a masked LM
    (an encoder with a masked-LM head: what an encoder's and a masked LM's probers both take)."""
    from medprobe.profiling.plan import KIND_NAMES, profiled

    planned = [kind for kind in KIND_NAMES if any(name in entry.profile.probers.get(kind, ()) for entry in profiled())]
    return planned[0] if planned else "masked-lm"


def fast_options(entry: ProberEntry) -> dict:
    return {option.dest: FAST_OPTIONS[option.dest] for option in entry.options if option.dest in FAST_OPTIONS}


def prober_verbs(checker: Checker, entry: ProberEntry) -> None:
    from medprobe.run import make_prober

    prober = make_prober(entry, checker.model(tiny_kind(entry.name)), device="cpu", seed=0, options=fast_options(entry))
    require(type(prober) is load(entry.target), f"create gave a {type(prober).__name__}, not a {entry.target}")
    require(isinstance(prober.settings, dict) and isinstance(prober.timings, dict), "settings and timings are dicts")
    for kind in entry.kinds:
        VERB_CHECKS[kind](prober, entry)


# --- the CLI: each prober's own options only ------------------------------------------------------


def flag_pattern(flag: str) -> re.Pattern:
    return re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w-])")


def probe_output(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `medprobe probe ARGV` run in this process, as the command runs it."""
    from medprobe.cli.probe import run_probe_command

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = run_probe_command(argv)
        except SystemExit as exited:  # --help (0) and argparse's refusals (2)
            code = exited.code if isinstance(exited.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def all_flags(registry: Registry) -> set[str]:
    return {o.flag for e in [*registry.probers.values(), *registry.tasks.values()] for o in e.options}


def prober_help(checker: Checker, entry: ProberEntry) -> None:
    found = checker.registry
    for task in found.tasks_for(entry.name):
        code, text, _ = probe_output(["--prober", entry.name, "--task", task, "--help"])
        require(code == 0, f"probe --prober {entry.name} --task {task} --help exits {code}")
        own = {o.flag for o in [*entry.options, *found.tasks[task].options]}
        missing = [flag for flag in own if not flag_pattern(flag).search(text)]
        require(not missing, f"probe --prober {entry.name} --task {task} --help does not list {missing}")
        foreign = sorted(flag for flag in all_flags(found) - own if flag_pattern(flag).search(text))
        require(not foreign, f"probe --prober {entry.name} --task {task} --help lists {foreign} of other probers or tasks")


def prober_foreign_options(checker: Checker, entry: ProberEntry) -> None:
    found = checker.registry
    own = {o.flag for o in [*entry.options, *found.tasks[entry.default_task].options]}
    owners: dict[str, list[str]] = {}
    for kind, entries in (("--prober", found.probers), ("--task", found.tasks)):
        for owner, other in entries.items():
            for option in other.options:
                owners.setdefault(option.flag, []).append(f"{kind} {owner}")
    for flag in sorted(set(owners) - own):
        code, _, error = probe_output(["--prober", entry.name, flag, "3", "--dataset", "d", "--model", "m"])
        require(code == 2, f"probe --prober {entry.name} {flag} 3 exits {code}, not 2")
        named = flag_pattern(flag).search(error) and all(o in error for o in owners[flag])
        require(named, f"probe --prober {entry.name} {flag} 3 does not name {', '.join(owners[flag])}: {error.strip()}")


# --- tasks: the entry against its class, metric and builder ---------------------------------------


def task_contract(checker: Checker, entry: TaskEntry) -> None:
    from medprobe.tasks import contract_gaps

    cls = load_target(entry.target)
    check_defaults(entry.options, lambda dest: inspect.signature(cls.__init__), entry.target)
    task = cls()  # every option has a default: the task runs without any
    gaps = contract_gaps(task)
    require(not gaps, f"{entry.target} lacks {', '.join(gaps)} of the Task contract (medprobe.tasks.Task)")
    require(cls.FIELDS and cls.METRIC and cls.GROUP_BY, f"{entry.target}: FIELDS, METRIC and GROUP_BY are empty")
    require(isinstance(task.plot_metric, str) and isinstance(task.timings, dict), "plot_metric is a str, timings a dict")
    require(set(entry.accepts) <= set(PROTOCOLS), f"accepts unknown kinds {sorted(set(entry.accepts) - set(PROTOCOLS))}")
    takers = any(set(p.kinds) & set(entry.accepts) for p in checker.registry.probers.values())
    require(takers, f"no registered prober does {' or '.join(entry.accepts)}")
    for option in entry.options:  # `publish results` names a subset in the model card with these words
        if option.subset and option.switch:  # a switch's words stand alone ("queries the control misses")
            require(option.subset_text and "{}" not in option.subset_text, f"{option.flag} makes a subset: give it a subset_text")
        elif option.subset:
            require(option.subset_text.count("{}") == 1, f"{option.flag} makes a subset: give it a subset_text with one {{}}")


def task_metric(checker: Checker, entry: TaskEntry) -> None:
    from medprobe.resources import import_evaluate, metric_path

    metric = import_evaluate().load(metric_path(load_target(entry.target).METRIC))
    require(metric.name and metric.inputs_description, f"the metric {metric.name!r} has no name or inputs_description")


def builder_features(benchmark: str) -> dict[str, set[str]]:
    """Per BUILDER_CONFIG of the benchmark's builder: the field names of its _info()."""
    from medprobe.building.build import builder_class

    cls = builder_class(benchmark)
    configs = cls.BUILDER_CONFIGS or [cls.BUILDER_CONFIG_CLASS(name="default")]
    return {config.name: set(cls._info(SimpleNamespace(config=config)).features) for config in configs}


def task_builder_fields(checker: Checker, entry: TaskEntry) -> None:
    per_config = builder_features(entry.benchmark)
    require(per_config, f"the builder of {entry.benchmark} has no config")
    fields = set(load_target(entry.target).FIELDS)
    for config, features in per_config.items():
        missing = sorted(fields - features)
        require(not missing, f"{entry.benchmark}/{config} has no field {', '.join(missing)} that task {entry.name} reads")


def documented_outputs(metric: str) -> str:
    """The metric module's documentation of what it returns (its inputs_description and card)."""
    from medprobe.resources import import_evaluate, metric_path

    card = Path(metric_path(metric)) / "README.md"
    text = import_evaluate().load(metric_path(metric)).inputs_description
    return text + (card.read_text(encoding="utf-8") if card.is_file() else "")


def task_documentation(entry: TaskEntry) -> str:
    cls = load_target(entry.target)
    return f"{sys.modules[cls.__module__].__doc__ or ''}\n{cls.__doc__ or ''}\n{entry.description}"


def task_documented(checker: Checker, entry: TaskEntry) -> None:
    cls = load_target(entry.target)
    words = lambda text, word: re.search(rf"(?<![\w@]){re.escape(word)}(?![\w@])", text)  # noqa: E731
    grouped = cls.GROUP_BY in cls.FIELDS or words(task_documentation(entry), cls.GROUP_BY)
    require(grouped, f"it groups by {cls.GROUP_BY!r}: neither a field it reads nor named in {entry.target}'s documentation")
    headline = re.sub(r"\d+$", "k", entry.headline)  # acc@10 is documented as acc@k
    documented = task_documentation(entry) + documented_outputs(cls.METRIC)
    require(
        words(documented, entry.headline) or words(documented, headline),
        f"its headline {entry.headline!r} is documented neither by {entry.target} nor by the {cls.METRIC} metric",
    )


@dataclass(frozen=True)
class TaskRun:
    config: str | None
    prober: str
    task_options: dict


def task_run(entry: TaskEntry) -> TaskRun:
    """A task's tiny run, read from its profile plan: its first config and first prober, the plan's --quick
    options made smaller still (TINY_TASK_OPTIONS)."""
    from medprobe.profiling.plan import KIND_NAMES

    plan = entry.profile
    require(plan is not None, f"task {entry.name} has no profile plan (ProfilePlan): give it one, so that it can be run")
    prober = next(p for kind in KIND_NAMES for p in plan.probers.get(kind, ()))
    quick = plan.quick.get("task", {})
    own = {option.dest for option in entry.options}
    return TaskRun(
        plan.configs[0], prober, {**quick, **{dest: value for dest, value in TINY_TASK_OPTIONS.items() if dest in own}}
    )


def task_runs(checker: Checker, entry: TaskEntry) -> None:
    """A real run through medprobe.run.run: the headline is reported with its interval and chance, the groups
    are values of GROUP_BY, and the record says what it measured and whom to cite."""
    from medprobe.run import RunRequest, run

    planned = task_run(entry)
    prober = checker.registry.probers[planned.prober]
    require(set(prober.kinds) & set(entry.accepts), f"its plan's prober {prober.name} does not do {' or '.join(entry.accepts)}")
    dataset, config = checker.task_data(entry)
    out = checker.workdir / "runs" / f"{entry.name}.json"
    record = run(
        RunRequest(
            task=entry.name,
            prober=prober.name,
            dataset=dataset,
            config=config,
            model=checker.model(tiny_kind(prober.name)),
            seed=0,
            device="cpu",
            prober_options=fast_options(prober),
            task_options=planned.task_options,
            out=str(out),
        ),
        print_fn=lambda text: None,
    )
    headline = entry.headline
    require(headline in record.metrics, f"its headline {headline!r} is not among the metrics {sorted(record.metrics)}")
    require(record.per_group and record.benchmark == entry.benchmark, "the record has no groups, or another benchmark")
    cls = load(entry.target)
    if cls.GROUP_BY in cls.FIELDS:  # the groups are values of that field
        from datasets import load_dataset

        values = set(load_dataset(dataset, config, split="test")[cls.GROUP_BY])
        require(set(record.per_group) <= values, f"its groups {sorted(record.per_group)} are not {cls.GROUP_BY} values")
    interval = record.intervals.get(headline)
    require(interval and interval["n"] > 0, f"its headline has no interval: give estimators() of {headline} and outcomes")
    require(interval["low"] <= record.metrics[headline] <= interval["high"], f"the interval {interval} misses the headline")
    chance = record.chance.get(headline)
    require(chance and 0 <= chance["value"] <= 1, f"its headline has no chance level: give Scored.chance[{headline!r}]")
    require(record.data_fingerprint["sha256"] and record.subset["items"] == interval["n"], "the items probed are not recorded")
    if any(option.subset and option.dest in planned.task_options for option in entry.options):  # what of what it kept
        kept = record.subset.get("of") or {}
        require(
            record.subset["subset"] and 0 < kept.get("probed", 0) < kept.get("total", 0) and kept.get("unit"),
            f"a subset option was given, but subset_of says {kept}: set it in load",
        )
    require(record.command.startswith(f"medprobe probe --prober {prober.name} "), f"the command recorded is {record.command!r}")
    require(set(entry.citations) <= set(record.citations), "the record does not cite the task's citations")


def entry_citations(checker: Checker, entry: TaskEntry | ProberEntry) -> None:
    from medprobe.citations import bibtex

    require(entry.citations, "it cites nothing: give citations= the BibTeX keys of its paper (or 'medprobe')")
    bibtex(entry.citations)  # a key without an entry, or a bibtex file that is not there, is a UserError naming it


PROBER_RULES = (
    Rule(
        "prober-class",
        "the class is a medprobe.contracts.Prober with the entry's name and kinds and its own create",
        "prober",
        prober_class,
    ),
    Rule(
        "prober-option-defaults",
        "each option's default is the default of the keyword it passes",
        "prober",
        prober_option_defaults,
    ),
    Rule("prober-options-distinct", "no two options of a probe share a flag or a destination", "prober", prober_options_distinct),
    Rule("prober-verbs", "built by create on a tiny model, it answers every verb of its kinds", "prober", prober_verbs),
    Rule("prober-help", "probe --help lists the prober's and task's options and no other", "prober", prober_help),
    Rule(
        "prober-foreign-options", "an option of another prober or task exits 2 naming its owner", "prober", prober_foreign_options
    ),
    Rule("prober-citations", "its citations are BibTeX keys medprobe can print", "prober", entry_citations),
)
TASK_RULES = (
    Rule("task-contract", "the class keeps the Task contract and its options' defaults", "task", task_contract),
    Rule("task-metric", "its METRIC folder loads with evaluate", "task", task_metric),
    Rule("task-builder-fields", "its builder's features hold the task's FIELDS in every config", "task", task_builder_fields),
    Rule("task-documented", "its GROUP_BY and headline are documented", "task", task_documented),
    Rule("task-runs", "a run on tiny models reports the headline with its interval and chance", "task", task_runs),
    Rule("task-citations", "its citations are BibTeX keys medprobe can print", "task", entry_citations),
)


def rules_for(tasks: list[str], probers: list[str]) -> list[tuple[Rule, str]]:
    """Every rule on these entries, the tasks' first (their data is built once, then probers reuse nothing)."""
    return [(rule, name) for name in tasks for rule in TASK_RULES] + [(rule, name) for name in probers for rule in PROBER_RULES]
