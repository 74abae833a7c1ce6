"""What medprobe can run, as data: the probers (name -> class, kinds, options) and the tasks
(name -> class, benchmark, accepted prober kinds, headline metric, options); what a task reads, its
metric and its groups are its class's FIELDS, METRIC and GROUP_BY (medprobe.tasks.base).

This module imports nothing heavy (no torch, transformers or datasets), so that `medprobe --help`
and `medprobe probe --prober X --help` stay fast: classes are named by "module:attribute" and
imported only when a run needs them (`load`).

Adding a prober = its module + one `ProberEntry` in `BUILTIN_PROBERS`; adding a benchmark task = its
module under `medprobe/tasks/` + one `TaskEntry` in `BUILTIN_TASKS`. Every entry names, in
`citations`, the BibTeX keys a run using it must cite (medprobe/citations.py adds medprobe's own). The
CLI builds each prober's and task's options from here; `medprobe.cli.plugin_kit.conformance` checks every
entry against the code it names (an option's default is the class's own default, the class implements
the Protocols of its kinds, ...).

The `Registry` holds the built-ins and the entries other installed packages add through the
entry-point groups `medprobe.tasks` and `medprobe.probers` (PLUGIN_GROUPS), each entry point naming
one TaskEntry / ProberEntry object and named after it, and which distribution each came from.
`registry()` is the process's one, built on first use (importing this module reads no entry point);
the module an entry point names is imported then, so it must be as light as this one. A name taken
twice, or a plugin that does not load, is a PluginError naming the distributions;
MEDPROBE_DISABLE_PLUGINS=1 skips them all. Tests build their own (`Registry.build`, `using`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from medprobe.contracts import UserError
from medprobe.official_data import OFFICIAL_DATA, OfficialData

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def parse_cutoffs(text: str) -> list[int]:
    try:
        cutoffs = sorted({int(part) for part in text.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}") from None
    if not cutoffs or cutoffs[0] < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return cutoffs


def parse_diseases(text: str) -> int | list[str]:
    """`N` (the first N eligible diseases) or a comma-separated list of CUIs."""
    if text.isdigit():
        if int(text) < 1:
            raise argparse.ArgumentTypeError("--diseases N needs N >= 1")
        return int(text)
    cuis = [part.strip() for part in text.split(",") if part.strip()]
    if not cuis:
        raise argparse.ArgumentTypeError(f"expected a number or comma-separated CUIs, got {text!r}")
    return cuis


@dataclass(frozen=True)
class Option:
    """One command-line option of a prober or task, passed to it as the keyword `dest`.

    `default` is what the class or task uses when the option is left out; the CLI shows it in
    `--help` and passes nothing, so the code's own default applies (a conformance test checks
    that the two agree). `flag=True` is a switch (store_true); `invert=True` stores False.
    """

    flag: str
    dest: str
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    choices: tuple | None = None
    metavar: str | None = None
    switch: bool = False
    invert: bool = False
    output: bool = False  # a file the run writes: checked to be writable before the run starts
    subset: bool = False  # given, the run probes a subset of the benchmark (recorded; `publish` refuses it unless told)
    subset_text: str = (
        ""  # how a published result names that subset; {} = the option's value, e.g. "first {} queries per relation"
    )

    def add_to(self, group: argparse._ActionsContainer) -> None:
        shown = "" if self.switch or self.default is None else f" (default: {show_default(self.default)})"
        common = {"dest": self.dest, "help": self.help + shown, "default": argparse.SUPPRESS}
        if self.switch:
            group.add_argument(self.flag, action="store_false" if self.invert else "store_true", **common)
        else:
            group.add_argument(self.flag, type=self.type, choices=self.choices, metavar=self.metavar, **common)


def show_default(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def batch_size(default: int, dest: str = "batch_size", what: str = "texts per forward pass") -> Option:
    return Option("--batch-size", dest, what, type=positive_int, default=default, metavar="N")


def seeds(default: int, paper: str = "") -> Option:
    return Option(
        "--seeds",
        "seeds",
        f"train with N seeds (--seed, --seed+1, ...) and report mean and std{paper}",
        type=positive_int,
        default=default,
        metavar="N",
    )


@dataclass(frozen=True)
class ProberEntry:
    name: str
    target: str  # "module:Class"
    kinds: tuple[str, ...]  # Protocols of medprobe.contracts it implements (api.PROTOCOLS keys)
    description: str
    model: str  # which models it takes, for --help and for `medprobe profile`
    default_task: str
    options: tuple[Option, ...] = ()
    # BibTeX keys for the method: its paper, or ("medprobe",) for a method medprobe introduced; each key is in
    # hub_cards/citations.bib or in the file `bibtex` names
    citations: tuple[str, ...] = ()
    bibtex: str = ""  # "package:file.bib": a plugin's own BibTeX file (medprobe.resources.package_resource)

    def create(self, model: str, *, device: str = "auto", seed: int | None = None, **options: Any) -> Any:
        """The prober on `model`: its class's `create` (medprobe.contracts.Prober.create), the one way every
        prober is built, with only the options given (the class's own defaults fill the rest)."""
        from medprobe.contracts import PROTOCOLS

        prober = load(self.target).create(model, device=device, seed=seed, **options)
        missing = [kind for kind in self.kinds if not isinstance(prober, PROTOCOLS[kind])]
        if missing:  # an entry that promises more than its class does: a bug, not a user error
            raise TypeError(f"prober {self.name} ({self.target}) does not implement {', '.join(missing)}")
        return prober


@dataclass(frozen=True)
class ProfilePlan:
    """How `medprobe profile` runs a benchmark: which probers a model of each kind gets, on which configs,
    with what data when the user gives none, and what `--quick` changes.

    Model kinds are those of `medprobe.models.model_kind`: encoder, masked-lm, causal-lm, seq2seq. A kind
    that is not in `probers` is skipped with the reason in `skip` (or a generic one).
    """

    probers: dict[str, tuple[str, ...]]  # model kind -> the probers it gets, in order
    skip: dict[str, str] = field(default_factory=dict)  # model kind -> why this benchmark does not fit it
    configs: tuple[str | None, ...] = (None,)  # the configs profiled (None: the task's own choice, e.g. every MST task)
    floor: dict[str, Any] | None = None  # prober options of a floor run beside each model run (MST: random weights)
    floor_text: str = ""  # the floor in words, for the profile table
    # without --data-dir NAME=PATH: "sample" (a shipped folder, loaded as it is), "build" (the builder's default
    # source: generated data, or a sample it ships), or "skip" (no data: the benchmark is skipped with `data_text`)
    without_data: str = "build"
    sample: str = ""  # "sample": the folder, relative to the medprobe package
    sample_is_benchmark: bool = True  # False: scores on this data are not the benchmark's (said, and never published)
    data_text: str = ""  # what that data is (or, for "skip", why there is none and how to give it)
    release: bool = True  # a raw release folder can be built from (False: the benchmark is generated, it has none)
    quick: dict[str, dict[str, Any]] = field(default_factory=dict)  # --quick: {"task": {...}, "prober": {...}, "build": {...}}
    quick_text: str = ""  # --quick in words, for `medprobe profile --help`


@dataclass(frozen=True)
class TaskEntry:
    name: str
    target: str  # "module:Class" of the task (medprobe.tasks.<benchmark>)
    benchmark: str  # the dataset under datasets/ (and on the Hub) the task reads
    description: str  # (what it reads, its metric and its groups are the task class's FIELDS, METRIC, GROUP_BY)
    accepts: tuple[str, ...]  # prober kinds it can run
    headline: str  # the one number `medprobe profile` reports (with its interval and chance level)
    options: tuple[Option, ...] = field(default_factory=tuple)
    # BibTeX keys: the benchmark's paper, then the papers of the sources its rows come from; each key is in
    # hub_cards/citations.bib or in the file `bibtex` names
    citations: tuple[str, ...] = ()
    bibtex: str = ""  # "package:file.bib": a plugin's own BibTeX file (medprobe.resources.package_resource)
    # options (dests) that change what the metric means: `medprobe compare` pairs only runs that agree on them
    paired_settings: tuple[str, ...] = ()
    profile: ProfilePlan | None = None  # how `medprobe profile` runs it (None: not profiled)
    lm_eval: str = ""  # "module:function" writing its lm-evaluation-harness tasks (`medprobe export lm-eval`); "" = none
    builder: str = ""  # "module:Class" of its datasets builder ("": the shipped datasets/<benchmark>/<benchmark>.py)
    card: str = ""  # path of its dataset card template ("": the shipped hub_cards/<benchmark>.md)
    build_options: tuple[Option, ...] = ()  # extra `medprobe build <benchmark>` options, passed as builder parameters
    # what a raw release file of the benchmark is called -> a regex of such file names: a built folder never needs
    # them, so `medprobe publish dataset` refuses them in an open repo
    raw_files: dict[str, str] = field(default_factory=dict)
    # the data files of the benchmark's official build (medprobe.official_data): a run on them is "official data"
    official_data: OfficialData | None = None
    # what a run ranks among when it is derived from the config's data (e.g. a set's answer space), in words: runs on
    # different data then rank among different candidates, and `compare --intersect` says so ("": items carry their own)
    candidate_space: str = ""


K_OPTION = Option("--k", "k", "acc@k cut-offs, e.g. 1,5,10", type=parse_cutoffs, default=[1, 10], metavar="K,...")
DTYPE = Option(
    "--dtype",
    "dtype",
    "weight precision: auto = bfloat16 on a CUDA GPU that supports it, else float32",
    choices=("auto", "float32", "bfloat16", "float16"),
    default="auto",
)
PER_RELATION = Option(
    "--per-relation",
    "per_relation",
    "probe only the first N queries of each relation",
    type=positive_int,
    metavar="N",
    subset=True,
    subset_text="first {} queries per relation",
)
# the validity facets of a ranking task (medprobe.tasks.facets): MedLAMA's, and a plugin's ranking task may take them too
RANKING_FACET_OPTIONS = (
    Option(
        "--no-control",
        "control",
        "leave out the prompt-bias control (one query per relation and template, its subject replaced by a placeholder, "
        "ranked over the same candidates: control_acc@k, above_bias@k)",
        switch=True,
        invert=True,
        default=True,
    ),
    Option(
        "--control-placeholder",
        "control_placeholder",
        "the neutral subject of the control query",
        default="X",
        metavar="TEXT",
    ),
    Option(
        "--only-control-misses",
        "only_control_misses",
        "score only the queries whose control has no gold answer in its top k (LAMA-UHN style; a subset)",
        switch=True,
        default=False,
        subset=True,
        subset_text="queries the prompt-bias control misses",
    ),
    Option(
        "--shuffled-control",
        "shuffled_control",
        "also rank each query with another subject of its relation (seeded by --seed): shuffled_acc@k, above_shuffled@k",
        switch=True,
        default=False,
    ),
    Option(
        "--ece-bins", "ece_bins", "equal-mass bins of the calibration error (ECE)", type=positive_int, default=10, metavar="B"
    ),
)
ONLY_CANDIDATES = Option(
    "--only-candidates", "only_candidates", "drop generated answers that are not in the candidate set", switch=True, default=False
)

BUILTIN_PROBERS: tuple[ProberEntry, ...] = (
    ProberEntry(
        "contrastive",
        "medprobe.contrastive.prober:ContrastiveProbe",
        ("ranking", "candidate-scoring"),
        "Contrastive-Probe: [CLS] retrieval over the answer space, optionally after rewiring on raw sentences",
        "an encoder (no MLM head needed), e.g. minilm",
        "medlama",
        options=(
            batch_size(128),
            DTYPE,
            Option(
                "--similarity",
                "similarity",
                "cos, or l2: L2 distance on raw [CLS], as the released code searched",
                choices=("cos", "l2"),
                default="cos",
            ),
            Option("--layers", "layers", "probe with only the first L transformer layers", type=positive_int, metavar="L"),
            Option(
                "--rewire-corpus",
                "rewire_corpus",
                "rewire first on this text file (one sentence a line), or on a MedLAMA release corpus by name "
                "(pubmed_sents_no_punkt_10k_0 ... _9, wiki_sents_no_punkt_10k.txt: downloaded once at the pinned "
                "commit, or DIR/NAME read from a release folder DIR)",
                metavar="FILE",
            ),
            Option("--rewire-steps", "rewire_steps", "rewiring steps", type=positive_int, default=150, metavar="N"),
            Option(
                "--rewire-batch-size",
                "rewire_batch_size",
                "sentence pairs per step",
                type=positive_int,
                default=192,
                metavar="N",
            ),
            Option("--temperature", "temperature", "InfoNCE temperature", type=positive_float, default=0.04),
            Option(
                "--rewire-learning-rate",
                "rewire_learning_rate",
                "AdamW learning rate",
                type=positive_float,
                default=2e-5,
                metavar="LR",
            ),
            Option(
                "--rewire-max-length",
                "rewire_max_length",
                "word pieces per rewiring text; the mask is always kept",
                type=positive_int,
                default=48,
                metavar="N",
            ),
            Option(
                "--rewire-mask-ratio",
                "rewire_mask_ratio",
                "longest masked tail, as a share of the sentence's words",
                type=positive_float,
                default=0.5,
                metavar="R",
            ),
            Option(
                "--checkpoint-every",
                "checkpoint_every",
                "save a probe-able checkpoint every N steps under --save-rewired",
                type=positive_int,
                metavar="N",
            ),
            Option("--save-rewired", "save_rewired", "save the rewired model and tokenizer to DIR", metavar="DIR"),
            Option(
                "--no-cache",
                "cache",
                "encode every name and query, neither reading nor writing the on-disk embedding cache "
                "($MEDPROBE_EMBEDDING_CACHE, default $HF_HOME/medprobe/embeddings, at most "
                "$MEDPROBE_EMBEDDING_CACHE_MAX_GB, default 2)",
                switch=True,
                invert=True,
                default=True,
            ),
        ),
        citations=("meng-etal-2022-rewire",),
    ),
    ProberEntry(
        "mask-predict",
        "medprobe.lm.mask_predict:MaskPredictProbe",
        ("ranking",),
        "X-FACTR-style decoding of 1..M masks with a masked-LM head (generates answers)",
        "a masked LM",
        "medlama",
        options=(
            batch_size(64),
            DTYPE,
            Option("--num-masks", "num_masks", "fill 1..N masks", type=positive_int, default=5, metavar="N"),
            Option(
                "--init-method",
                "init_method",
                "initial fill",
                choices=("independent", "order", "confidence"),
                default="order",
            ),
            Option(
                "--iter-method",
                "iter_method",
                "refinement after the initial fill, order = Order+Order",
                choices=("none", "order"),
                default="none",
            ),
            Option("--max-iter", "max_iter", "at most N refinement rounds", type=positive_int, default=10, metavar="N"),
            Option("--beam-size", "beam_size", "beam width", type=positive_int, default=5, metavar="N"),
            ONLY_CANDIDATES,
        ),
        citations=("jiang-etal-2020-x",),
    ),
    ProberEntry(
        "mask-average",
        "medprobe.lm.mask_average:MaskAverageProbe",
        ("ranking", "candidate-scoring"),
        "ranks the answer space by the mean token log-probability at L masks",
        "a masked LM",
        "medlama",
        options=(batch_size(64), DTYPE),
        citations=("kassner-etal-2021-multilingual",),
    ),
    ProberEntry(
        "generative",
        "medprobe.lm.seq2seq:GenerativeProbe",
        ("ranking",),
        "beam-search answers from a seq2seq model (T5 sentinel or BART mask)",
        "a seq2seq LM (T5, BART)",
        "medlama",
        options=(
            batch_size(16),
            DTYPE,
            Option("--beam-size", "beam_size", "beam width", type=positive_int, default=10, metavar="N"),
            Option("--num-return", "num_return", "sequences returned per query", type=positive_int, default=10, metavar="N"),
            Option("--max-new-tokens", "max_new_tokens", "longest answer in tokens", type=positive_int, default=24, metavar="N"),
            ONLY_CANDIDATES,
        ),
        citations=("meng-etal-2022-rewire",),  # the generation-based baseline of the MedLAMA paper
    ),
    ProberEntry(
        "causal-lm",
        "medprobe.lm.causal_lm:CausalLMProbe",
        ("ranking", "candidate-scoring"),
        "ranks candidates by the log-likelihood of the filled prompt under a decoder-only LM",
        "a causal LM, e.g. smollm2",
        "medlama",
        options=(
            batch_size(64),
            DTYPE,
            Option(
                "--length-normalization",
                "length_normalization",
                "mean or total log-probability of the scored tokens",
                choices=("mean", "none"),
                default="mean",
            ),
            Option(
                "--no-suffix",
                "score_suffix",
                "score only the answer tokens, not the prompt after the slot",
                switch=True,
                invert=True,
                default=True,
            ),
            Option(
                "--literal-template",
                "literal_template",
                "keep the template's space before a punctuation mark after the slot ('[Y] .'); removed by default",
                switch=True,
                default=False,
            ),
            Option(
                "--memorisation",
                "memorisation",
                "also record Min-K%%++ of each query with its gold answer (a membership signal, not a contamination "
                "verdict) and acc@k by its tertile; one more forward pass per query",
                switch=True,
                default=False,
            ),
            Option(
                "--mink-percent",
                "mink_percent",
                "with --memorisation: Min-K%%++ averages this percentage of a text's lowest token scores",
                type=positive_float,
                default=20.0,
                metavar="K",
            ),
        ),
        citations=("medprobe",),  # log-likelihood ranking of filled prompts, as medprobe does it
    ),
    ProberEntry(
        "pair-classifier",
        "medprobe.lm.pair_classifier:PairClassifierProbe",
        ("disease-classification",),
        "DisKnE: a sequence-pair classifier fine-tuned per disease with the Trainer",
        "an encoder, e.g. minilm",
        "disknE",
        options=(
            batch_size(64, "eval_batch_size", "pairs per evaluation forward pass"),
            DTYPE,
            Option("--train-batch-size", "train_batch_size", "training batch size", type=positive_int, default=8, metavar="N"),
            Option("--epochs", "epochs", "at most this many epochs, with early stopping", type=positive_float, default=8),
            Option("--learning-rate", "learning_rate", "AdamW learning rate", type=positive_float, default=2e-5, metavar="LR"),
            Option(
                "--patience",
                "patience",
                "epochs without a better validation loss before stopping",
                type=positive_int,
                default=2,
            ),
            Option(
                "--hypothesis",
                "hypothesis",
                "the disease name or the full MedNLI hypothesis",
                choices=("canonical", "full"),
                default="canonical",
            ),
            Option(
                "--hypothesis-only",
                "hypothesis_only",
                "baseline: classify the hypothesis without the premise",
                switch=True,
                default=False,
            ),
            Option(
                "--max-length",
                "max_length",
                "tokens per (premise, hypothesis) pair",
                type=positive_int,
                default=256,
                metavar="N",
            ),
        ),
        citations=("alghanmi-etal-2021-probing",),
    ),
    ProberEntry(
        "mlm-head",
        "medprobe.lm.mlm_head:MLMHeadProbe",
        ("choice-scoring",),
        "MST: a frozen encoder with a trained masked-LM head",
        "a masked LM or an encoder, e.g. minilm",
        "mst",
        options=(
            batch_size(64),
            DTYPE,
            Option("--scratch", "scratch", "same architecture with random weights (the floor)", switch=True, default=False),
            Option(
                "--vocabulary",
                "vocabulary",
                "softmax over the choices' word pieces (fast) or the whole vocabulary",
                choices=("choices", "full"),
                default="choices",
            ),
            Option("--epochs", "epochs", "training epochs of the head", type=positive_float, default=20),
            Option(
                "--learning-rate",
                "learning_rate",
                "AdamW learning rate of the head",
                type=positive_float,
                default=1e-3,
                metavar="LR",
            ),
        ),
        citations=("park-etal-2022-language",),
    ),
)

BUILTIN_TASKS: tuple[TaskEntry, ...] = (
    TaskEntry(
        "medlama",
        "medprobe.tasks.medlama:MedLAMATask",
        "medlama",
        "MedLAMA: rank the answer space for each cloze query; acc@k per relation, micro and macro",
        ("ranking",),
        "acc@10",
        options=(
            K_OPTION,
            Option(
                "--candidates",
                "candidates",
                "rank the whole answer space of the set, or only the answers of the query's relation",
                choices=("set", "relation"),
                default="set",
            ),
            PER_RELATION,
            Option(
                "--exclude-head",
                "exclude_head",
                "leave each query's own head name out of its predictions (the answer space holds the heads, and untuned "
                "encoders rank the head first for most queries; the paper keeps it)",
                switch=True,
                default=False,
            ),
            Option("--predictions", "predictions", "also write the top-k names of every query", metavar="JSONL", output=True),
            Option(
                "--rerank",
                "rerank",
                "rank only the names another run wrote with --predictions, per query "
                "(probers that score candidates: contrastive, mask-average, causal-lm)",
                metavar="JSONL",
            ),
            Option(
                "--rerank-top",
                "rerank_top",
                "with --rerank: the first N names of each query",
                type=positive_int,
                default=100,
                metavar="N",
            ),
            Option(
                "--variants",
                "variants",
                "also rank each query asked other ways, from the data's variants config (the release's other prompt; "
                "subject synonyms in a build from a UMLS release), with the same prober and candidates, and report "
                "consistency@k, consistency_top1 and robust_acc@k",
                choices=("none", "templates", "synonyms", "all"),
                default="none",
            ),
            *RANKING_FACET_OPTIONS,
        ),
        citations=("meng-etal-2022-rewire", "bodenreider-2004-unified"),
        # what a hit is; the cut-offs need not agree (acc@k of every cut-off both runs report comes from the ranks)
        paired_settings=("candidates", "exclude_head"),
        profile=ProfilePlan(
            probers={
                "encoder": ("contrastive",),
                "masked-lm": ("contrastive", "mask-average"),
                "causal-lm": ("causal-lm",),
                "seq2seq": ("generative",),
            },
            configs=("full", "hard"),
            without_data="sample",
            sample="demo_data/medlama_sample",
            sample_is_benchmark=False,
            data_text="the MedLAMA-format sample shipped with medprobe (108 textbook facts); this is NOT MedLAMA and its "
            "scores are not comparable with MedLAMA's (give --data-dir medlama=PATH for the real release)",
            quick={"task": {"per_relation": 10}},
            quick_text="MedLAMA full and hard with the first 10 queries of each relation (--per-relation 10)",
        ),
        lm_eval="medprobe.tasks.medlama_lm_eval:export",
        build_options=(
            Option(
                "--umls-dir",
                "umls_dir",
                "regenerate MedLAMA from your own UMLS release, this META folder (MRCONSO.RRF, MRREL.RRF); "
                "--data-dir then only supplies prompts.csv (see the MedLAMA card and README)",
                metavar="META",
            ),
            Option(
                "--synonyms",
                "synonyms",
                "with --umls-dir: up to N subject synonyms per item in the variants config, drawn (seeded) from the "
                "head's English MRCONSO names that are not suppressed (default 3; 0: none); the release files have none",
                type=non_negative_int,
                metavar="N",
            ),
        ),
        raw_files={"MedLAMA release file": r"^(\w+_1000|\w+_\d+_hard)\.csv$|^prompts\.csv$|_sents_no_punkt_10k"},
        official_data=OFFICIAL_DATA["medlama"],
        candidate_space="the answer space of the run's set (--candidates set) or of each relation (--candidates relation)",
    ),
    TaskEntry(
        "mst",
        "medprobe.tasks.mst:MSTTask",
        "mst",
        "MST measuring skills: train a head on each task's train split, accuracy on --split; without --config, every task",
        ("choice-scoring",),
        "accuracy",
        options=(
            Option("--train-split", "train_split", "split the head is trained on", default="train"),
            seeds(3),
        ),
        citations=("park-etal-2022-language",),
        profile=ProfilePlan(
            probers={"encoder": ("mlm-head",), "masked-lm": ("mlm-head",)},
            skip={
                "causal-lm": "MST needs a masked-LM head (choice scoring with a causal LM is not implemented)",
                "seq2seq": "MST's mlm-head prober trains a masked-LM head on an encoder",
            },
            floor={"scratch": True},
            floor_text="the same architecture with random weights (--scratch)",
            without_data="build",
            data_text="generated by the MST builder",
            release=False,
            quick={"task": {"seeds": 1}, "build": {"train_size": 200, "validation_size": 20, "test_size": 100}},
            quick_text="MST generated with 200 train / 20 validation / 100 test rows per task and 1 seed (--seeds 1)",
        ),
        lm_eval="medprobe.tasks.mst_lm_eval:export",
        official_data=OFFICIAL_DATA["mst"],
    ),
    TaskEntry(
        "context_variance",
        "medprobe.tasks.context_variance:ContextVarianceTask",
        "context_variance",
        "context variance: rank changes of the target and context objects per added context segment; UCM",
        ("candidate-scoring",),
        "understand",
        options=(
            replace(K_OPTION, help="top-k accuracies without and with context"),
            Option(
                "--per-relation",
                "per_relation",
                "keep the first N instances of each relation",
                type=positive_int,
                metavar="N",
                subset=True,
                subset_text="first {} instances per relation",
            ),
            Option("--predictions", "predictions", "also write the ranks of every row", metavar="JSONL", output=True),
        ),
        citations=("yao-etal-2023-context", "sung-etal-2021-language"),
        profile=ProfilePlan(
            probers={"encoder": ("contrastive",), "masked-lm": ("mask-average",), "causal-lm": ("causal-lm",)},
            skip={"seq2seq": "context variance needs a prober that scores candidates (the generative prober only generates)"},
            configs=("real-target",),
            without_data="build",
            sample_is_benchmark=False,
            data_text="built from the sample corpus shipped with the context-variance builder; a synthetic sample, "
            "not the paper's corpus",
            quick={"task": {"per_relation": 5}},
            quick_text="context variance with the first 5 instances of each relation (--per-relation 5)",
        ),
        official_data=OFFICIAL_DATA["context_variance"],
    ),
    TaskEntry(
        "disknE",
        "medprobe.tasks.disknE:DisKnETask",
        "disknE",
        "DisKnE: fine-tune a pair classifier per target disease; F1 per disease, macro and weighted",
        ("disease-classification",),
        "macro_f1",
        options=(
            Option(
                "--category",
                "category",
                "medical variants: test one category (symptoms_diseases, treatments_diseases, tests_diseases, procedure_diseases)",
            ),
            Option(
                "--diseases",
                "diseases",
                "only the first N eligible target diseases, or these CUIs (default: all)",
                type=parse_diseases,
                metavar="N|CUI,...",
                subset=True,
                subset_text="first {} eligible diseases",
            ),
            seeds(1, "; the paper used 3"),
        ),
        citations=("alghanmi-etal-2021-probing", "romanov-shivade-2018-lessons", "ben-abacha-etal-2019-overview"),
        profile=ProfilePlan(
            probers={"encoder": ("pair-classifier",), "masked-lm": ("pair-classifier",)},
            skip={
                "causal-lm": "DisKnE fine-tunes an encoder as a pair classifier",
                "seq2seq": "DisKnE fine-tunes an encoder as a pair classifier",
            },
            configs=("medical_similar",),
            without_data="skip",
            data_text="no data: DisKnE is built from licensed MedNLI and UMLS files; pass --data-dir disknE=PATH "
            "(a release folder, or a folder built by `medprobe build disknE`)",
            quick={"task": {"diseases": 2}, "prober": {"epochs": 1}},
            quick_text="DisKnE (only with its data) with the first 2 diseases (--diseases 2) and 1 epoch (--epochs 1)",
        ),
        raw_files={"DisKnE annotation file": r"(?i)^DisknE_\w+_annotation\.csv$"},
    ),
)


def load(target: str) -> Any:
    """The object named by "module:attribute" (imported now, not when the registry is read)."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


# probers that are gone, and what to use instead (the CLI still takes --prober rank-change for one
# release, choosing the scorer from the model: medprobe.cli.probe.replace_removed_prober)
REMOVED_PROBERS = {
    "rank-change": "context variance takes any prober that scores candidates: --prober mask-average (a masked LM), "
    "causal-lm (a causal LM) or contrastive (an encoder), with --task context_variance",
}
REMOVED_PROBER_TASKS = {"rank-change": "context_variance"}  # the task a removed prober's alias runs by default


# --- the registry: built-ins + plugins, built once --------------------------------------------------

# Entry-point groups an installed package declares its own entries in, and the entry class each names.
PLUGIN_GROUPS: dict[str, type] = {"medprobe.tasks": TaskEntry, "medprobe.probers": ProberEntry}
KIND_OF_GROUP = {"medprobe.tasks": "task", "medprobe.probers": "prober"}
NO_PLUGINS = "MEDPROBE_DISABLE_PLUGINS"  # set (to anything but ""): the built-in entries only


class PluginError(UserError):
    """An installed plugin cannot be registered; the message names its distribution and entry point."""


@dataclass(frozen=True)
class PluginSource:
    """Where a plugin's entry comes from: the distribution that declares it, its version and the entry point."""

    distribution: str
    version: str
    entry_point: str  # "module:attribute" the entry point names


class Registry:
    """What can run: the task and prober entries by name (the built-ins first, then the plugins' in the
    order of their distributions' names) and, for each plugin entry, the distribution it came from.

    `registry()` is the process's one, built on first use; `Registry.build(...)` makes another (a test's,
    or `medprobe plugin check`'s: built-ins plus one distribution's entry points), and `using(...)` makes
    it the one `registry()` returns for a while. The mappings are read-only: a registry is never edited,
    a new one is built (`with_entries`)."""

    def __init__(
        self,
        tasks: Iterable[TaskEntry],
        probers: Iterable[ProberEntry],
        sources: Mapping[tuple[str, str], PluginSource] | None = None,
    ) -> None:
        self.tasks: Mapping[str, TaskEntry] = MappingProxyType({entry.name: entry for entry in tasks})
        self.probers: Mapping[str, ProberEntry] = MappingProxyType({entry.name: entry for entry in probers})
        self.sources: Mapping[tuple[str, str], PluginSource] = MappingProxyType(dict(sources or {}))

    @classmethod
    def build(cls, points: Iterable[EntryPoint] | None = None, *, plugins: bool = True) -> Registry:
        """The built-in entries, then those of `points` (entry points of the groups PLUGIN_GROUPS; default:
        every installed distribution's; `plugins=False`: none). A name taken twice, an entry point that
        does not load or names no entry of its group, is a PluginError naming the distributions."""
        tasks, probers = list(BUILTIN_TASKS), list(BUILTIN_PROBERS)
        if not plugins:
            return cls(tasks, probers)
        owners = {("task", e.name): "medprobe (built in)" for e in tasks} | {
            ("prober", e.name): "medprobe (built in)" for e in probers
        }
        sources: dict[tuple[str, str], PluginSource] = {}
        found = installed_points() if points is None else [p for p in points if p.group in PLUGIN_GROUPS]
        for point in sorted(found, key=lambda p: (distribution_of(p), p.group, p.name)):
            entry = plugin_entry(point)
            key = (KIND_OF_GROUP[point.group], entry.name)
            if key in owners:
                raise PluginError(
                    f"two {key[0]}s are named {entry.name!r}: one of {owners[key]} and one of {distribution_of(point)} "
                    f"(entry point {point.value}); uninstall one of them"
                )
            owners[key] = distribution_of(point)
            (tasks if key[0] == "task" else probers).append(entry)
            dist = getattr(point, "dist", None)
            sources[key] = PluginSource(dist.name if dist else "", dist.version if dist else "", point.value)
        return cls(tasks, probers, sources)

    def with_entries(self, *entries: TaskEntry | ProberEntry) -> Registry:
        """A copy with these entries added, each replacing the entry of its kind and name if there is one
        (a test's own task or prober)."""
        tasks, probers = dict(self.tasks), dict(self.probers)
        for entry in entries:
            (tasks if isinstance(entry, TaskEntry) else probers)[entry.name] = entry
        return Registry(tasks.values(), probers.values(), self.sources)

    def task(self, name: str) -> TaskEntry:
        if name not in self.tasks:
            raise KeyError(f"no task named {name!r}; choose one of {', '.join(self.tasks)}")
        return self.tasks[name]

    def prober(self, name: str) -> ProberEntry:
        if name not in self.probers:
            raise KeyError(f"no prober named {name!r}; choose one of {', '.join(self.probers)}")
        return self.probers[name]

    def tasks_for(self, prober: str) -> list[str]:
        """The tasks that can run this prober (its kinds meet the task's accepted kinds)."""
        kinds = set(self.prober(prober).kinds)
        return [name for name, task in self.tasks.items() if kinds & set(task.accepts)]

    def benchmarks(self) -> list[str]:
        """The benchmarks (datasets) the tasks read, in registry order, each once: what `medprobe build` builds."""
        return list(dict.fromkeys(entry.benchmark for entry in self.tasks.values()))

    def benchmark_entry(self, benchmark: str) -> TaskEntry:
        """The first task entry of a benchmark: where its builder, card and build options are named."""
        for entry in self.tasks.values():
            if entry.benchmark == benchmark:
                return entry
        raise KeyError(f"no benchmark named {benchmark!r}; choose one of {', '.join(self.benchmarks())}")

    def plugins_used(self, task: str | None = None, prober: str | None = None) -> dict[str, dict]:
        """The plugin distributions of a run's entries, as its results file records them (`source.plugins`):
        {distribution: {"version", "entries": ["task NAME", "prober NAME"]}}; {} when both are built in."""
        used: dict[str, dict] = {}
        for kind, name in (("task", task), ("prober", prober)):
            source = self.sources.get((kind, name)) if name else None
            if source is not None:
                found = used.setdefault(source.distribution, {"version": source.version, "entries": []})
                found["entries"].append(f"{kind} {name}")
        return used


def installed_points() -> list[EntryPoint]:
    from importlib.metadata import entry_points

    return [point for group in PLUGIN_GROUPS for point in entry_points(group=group)]


def distribution_of(point: Any) -> str:
    dist = getattr(point, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an unnamed distribution"


def plugin_entry(point: EntryPoint) -> TaskEntry | ProberEntry:
    """The entry an entry point names, checked: the right class, and named as the entry point is."""
    where = f"entry point {point.name} = {point.value} (group {point.group}) of {distribution_of(point)}"
    expected = PLUGIN_GROUPS[point.group]
    try:
        entry = point.load()
    except Exception as err:  # noqa: BLE001 - whatever a plugin raises, the user learns which one
        raise PluginError(
            f"{where} does not load ({type(err).__name__}: {err}); fix or uninstall it (or set {NO_PLUGINS}=1)"
        ) from err
    if not isinstance(entry, expected):
        raise PluginError(f"{where} names a {type(entry).__name__}, expected a medprobe.registry.{expected.__name__}")
    if entry.name != point.name:
        raise PluginError(f"{where} names the entry {entry.name!r}: an entry point is named after its entry")
    return entry


_current: Registry | None = None


def registry() -> Registry:
    """The registry every command and run reads: built on first use from the built-ins and the installed
    plugins (none with MEDPROBE_DISABLE_PLUGINS=1), then kept for the process."""
    global _current
    if _current is None:
        _current = Registry.build(plugins=not os.environ.get(NO_PLUGINS))
    return _current


@contextmanager
def using(chosen: Registry) -> Iterator[Registry]:
    """Make `chosen` the registry `registry()` returns inside the block (a test's own, or `plugin check`'s)."""
    global _current
    before, _current = _current, chosen
    try:
        yield chosen
    finally:
        _current = before


# --- short ways to the one registry --------------------------------------------------------------


def prober_entry(name: str) -> ProberEntry:
    return registry().prober(name)


def task_entry(name: str) -> TaskEntry:
    return registry().task(name)


def tasks_for(prober: str) -> list[str]:
    """The tasks that can run this prober (its kinds meet the task's accepted kinds)."""
    return registry().tasks_for(prober)


def benchmarks() -> list[str]:
    return registry().benchmarks()


def benchmark_entry(benchmark: str) -> TaskEntry:
    return registry().benchmark_entry(benchmark)


def __getattr__(name: str) -> Any:
    """`TASKS` and `PROBERS`, the old module-level tables: the one registry's, with a DeprecationWarning (until 0.3)."""
    if name in ("TASKS", "PROBERS"):
        import warnings

        warnings.warn(
            f"medprobe.registry.{name} is deprecated and goes in 0.3: use medprobe.registry.registry().{name.lower()}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(registry(), name.lower())
    raise AttributeError(f"module 'medprobe.registry' has no attribute {name!r}")
