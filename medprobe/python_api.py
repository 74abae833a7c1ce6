"""medprobe from Python: thin functions over the run loop, the profile, the comparison and the build.

They are exported by `import medprobe` (imported on first use, so `import medprobe` stays light) and
do what the commands of the same name do, with the same checks and the same outputs:

    import medprobe

    record = medprobe.probe("contrastive", "medlama", dataset=medprobe.sample("medlama"), model="minilm",
                            out="runs/cos.json")
    report = medprobe.build("mst", "out/mst", train_size=200, validation_size=20, test_size=100)
    profile = medprobe.profile("minilm", "out/profile", benchmarks=["medlama"], quick=True)
    comparison = medprobe.compare(["runs/cos.json", "runs/l2.json"])
    record = medprobe.load("runs/cos.json")

Benchmark, task and prober names, and every option, are those of the registry (`medprobe probe --help`
lists them); an option is given by its keyword (`per_relation=2` for `--per-relation 2`). The examples
of each function run as they are, in that order, with the packaged MiniLM.
"""
# tests/test_python_api.py runs every example of these docstrings.

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medprobe.contracts import UserError
from medprobe.options import RESAMPLES_OPTION, SEED_OPTION

if TYPE_CHECKING:
    from medprobe.building.build import BuildReport
    from medprobe.profiling.profile import Profile
    from medprobe.records.record import RunRecord


@contextlib.contextmanager
def quietly(quiet: bool, loads_data: bool = True) -> Iterator[None]:
    """`quiet`: nothing printed, neither the tables nor any progress (medprobe's, datasets' or transformers'); else the
    progress policy of the commands (medprobe.progress: a bar on a terminal or in a notebook, plain lines otherwise).

    `loads_data` (probe, profile): datasets and huggingface_hub are imported now to be switched off now;
    imported later, in a fresh interpreter, they printed "Generating test split" and "Loading weights" under quiet.
    compare, which reads results files, does not import them for this (1.5 s)."""
    from medprobe.progress import policy

    with (
        policy(quiet, import_libraries=loads_data),
        contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext(),
    ):
        yield


def split_options(prober: str, task: str, options: dict[str, Any]) -> tuple[dict, dict]:
    """(prober options, task options) of the keywords given, by the registry's option names."""
    from medprobe.registry import prober_entry, task_entry

    prober_dests = {option.dest for option in prober_entry(prober).options}
    task_dests = {option.dest for option in task_entry(task).options}
    unknown = sorted(set(options) - prober_dests - task_dests)
    if unknown:
        known = ", ".join(sorted(prober_dests | task_dests)) or "none"
        raise UserError(f"{', '.join(unknown)}: not an option of prober {prober} or task {task} (known: {known})")
    return (
        {key: value for key, value in options.items() if key in prober_dests},
        {key: value for key, value in options.items() if key in task_dests and key not in prober_dests},
    )


def probe(
    prober: str,
    task: str | None = None,
    *,
    dataset: str | Path,
    model: str | Path,
    config: str | None = None,
    split: str = "test",
    seed: int | None = None,
    device: str = "auto",
    out: str | Path | None = None,
    plot: str | Path | None = None,
    quiet: bool = False,
    overwrite: bool = False,
    **options: Any,
) -> RunRecord:
    """Run one prober on one task (`medprobe probe`); the RunRecord, also written to `out` when given.

    `task` defaults to the prober's own; `options` are the prober's and the task's options by keyword. A file at
    `out`, beside it or at `plot` that medprobe did not write is refused (UserError) unless `overwrite`.

        >>> record = medprobe.probe("contrastive", "medlama", dataset=medprobe.sample("medlama"), model="minilm",
        ...                         out="runs/cos.json", quiet=True)
        >>> record.intervals["acc@10"]["low"] <= record.metrics["acc@10"] <= record.intervals["acc@10"]["high"]
        True
        >>> other = medprobe.probe("contrastive", "medlama", dataset=medprobe.sample("medlama"), model="minilm",
        ...                        similarity="l2", out="runs/l2.json", quiet=True)
    """
    from medprobe.registry import prober_entry
    from medprobe.run import RunRequest, check_request, refuse_foreign_outputs, run

    try:  # an unknown prober or task: the registry's message, as the CLI gives it
        task = task or prober_entry(prober).default_task
        prober_options, task_options = split_options(prober, task, options)
    except KeyError as err:
        raise UserError(err.args[0]) from None
    request = RunRequest(
        task=task,
        prober=prober,
        dataset=str(dataset),
        config=config,
        split=split,
        model=str(model),
        seed=seed,
        device=device,
        prober_options=prober_options,
        task_options=task_options,
        out=str(out) if out else None,
        plot=str(plot) if plot else None,
    )
    with quietly(quiet):
        entries = check_request(request)
        if not overwrite:
            refuse_foreign_outputs(request, entries)
        return run(request, entries=entries)


def profile(
    model: str | Path,
    out: str | Path,
    *,
    benchmarks: Sequence[str] | None = None,
    data_dirs: dict[str, str | Path] | None = None,
    quick: bool = False,
    device: str = "auto",
    seed: int | None = None,
    overwrite: bool = False,
    quiet: bool = False,
    model_kind: str | None = None,
) -> Profile:
    """Every benchmark that fits `model`, one knowledge profile written to the folder `out` (`medprobe profile`).
    `model_kind` (encoder, masked-lm, causal-lm, seq2seq) when the model's config cannot say: a model that only a
    plugin's prober reads.

    >>> profile = medprobe.profile("minilm", "out/profile", benchmarks=["medlama"], quick=True, quiet=True)
    >>> [(row["config"], row["prober"], row["metric"]) for row in profile.headline]
    [('full', 'contrastive', 'acc@10'), ('hard', 'contrastive', 'acc@10')]
    """
    from medprobe.profiling.plan import ProfileOptions, profiled_benchmarks
    from medprobe.profiling.run import run_profile

    chosen = tuple(dict.fromkeys(benchmarks)) if benchmarks else profiled_benchmarks()
    options = ProfileOptions(
        model=str(model),
        out=str(out),
        benchmarks=chosen,
        data_dirs={name: str(path) for name, path in (data_dirs or {}).items()},
        quick=quick,
        device=device,
        seed=seed,
        overwrite=overwrite,
        model_kind=model_kind,
    )
    with quietly(quiet):
        return run_profile(options)


def compare(
    inputs: Sequence[str | Path],
    *,
    intersect: bool = False,
    resamples: int = RESAMPLES_OPTION.default,
    seed: int = SEED_OPTION.default,
    out: str | Path | None = None,
    quiet: bool = True,
    allow_different_candidates: bool = False,
) -> dict:
    """Runs (results JSONs, published runs `hub:ORG/NAME/...`) or profiles (folders) paired on identical items (`medprobe compare`): the
    comparison as compare.json holds it, also written with compare.md into the folder `out` when given.

        >>> comparison = medprobe.compare(["runs/cos.json", "runs/l2.json"])
        >>> [(found["headline"], found["items"]["compared"]) for found in comparison["comparisons"]]
        [('acc@10', 108)]
    """
    from medprobe.comparison.outputs import Outputs, run_compare

    if len(inputs) < 2:
        raise UserError("compare needs at least two results JSONs or profile folders")
    outputs = Outputs(out=str(out) if out else None)
    with quietly(quiet, loads_data=False):
        return run_compare(
            [str(path) for path in inputs],
            outputs,
            intersect=intersect,
            resamples=resamples,
            seed=seed,
            allow_different_candidates=allow_different_candidates,
        )


def build(
    benchmark: str,
    out: str | Path,
    *,
    data_dir: str | Path | None = None,
    configs: Sequence[str] | None = None,
    overwrite: bool = False,
    **params: Any,
) -> BuildReport:
    """Build a benchmark into a Hub-ready folder `out` (`medprobe build`); `params` are builder parameters.

    >>> report = medprobe.build("mst", "out/mst", train_size=200, validation_size=20, test_size=100)
    >>> report.rows["comparison"]
    {'train': 200, 'validation': 20, 'test': 100}
    """
    from medprobe.building.build import build as build_benchmark

    return build_benchmark(
        benchmark,
        out,
        data_dir=str(data_dir) if data_dir else None,
        configs=list(configs) if configs else None,
        params=params,
        overwrite=overwrite,
    )


def load(path: str | Path) -> RunRecord | Profile:
    """What medprobe wrote, as Python objects: a results JSON as its RunRecord, a profile folder (or its
    profile.json) as its Profile.

        >>> medprobe.load("runs/cos.json").metrics == record.metrics
        True
        >>> len(medprobe.load("out/profile").headline)
        2
    """
    from medprobe.profiling.profile import Profile, read_verified_profile
    from medprobe.records import load_run

    path = Path(path)
    profile_json = path / "profile.json" if path.is_dir() else path
    if path.is_dir() and not profile_json.is_file():
        raise UserError(f"{path} is a folder without profile.json: give a results JSON or a profile folder")
    if profile_json.name == "profile.json":  # its files, runs and headline checked as a results JSON is
        profile, _ = read_verified_profile(profile_json.parent)
        try:
            return Profile(**profile)
        except TypeError as err:
            raise UserError(f"{profile_json} is not a medprobe profile ({err})") from err
    return load_run(path).record


def sample(benchmark: str) -> str:
    """The folder of the sample shipped with medprobe that `medprobe profile` probes for `benchmark`
    without --data-dir (its profile plan's `sample`); not the benchmark itself when the plan says so.

        >>> Path(medprobe.sample("medlama")).name   # the 108-fact MedLAMA-format sample of `medprobe demo`
        'medlama_sample'
    """
    from medprobe.profiling.plan import plans_of, sample_folder

    shipped = [plan for _, plan in plans_of(benchmark) if plan.without_data == "sample"]
    if not shipped:
        raise UserError(f"no sample of {benchmark!r} ships with medprobe; build it with medprobe.build({benchmark!r}, ...)")
    return str(sample_folder(shipped[0]))
