"""Shared fixtures. Tests are offline: the Hub, datasets and evaluate are told so before import."""

import os

for _var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The README's test command runs a pytest-xdist worker per core (pyproject's addopts): each worker, and the
# processes its tests start, gets its share of the cores. torch's OpenMP threads spin while they wait, so two
# workers that each use every core run some tests several times slower than one.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
if _WORKERS > 1:
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, str(max(1, (os.cpu_count() or 1) // _WORKERS)))
# The suite sees medprobe's built-in entries only, whatever plugins are installed beside it (subprocesses
# inherit this): another distribution's task or prober cannot change what a test expects. The plugin
# tests build their own registries (tests/test_plugins.py).
os.environ.setdefault("MEDPROBE_DISABLE_PLUGINS", "1")  # "" (set on purpose): the installed plugins too
# Ctrl-C as a terminal delivers it: a shell without job control starts background commands (`cmd &`, nohup) with
# SIGINT ignored, which Python and every process it starts then keep; the interrupt tests would see nothing.
# (A handler, unlike SIG_IGN, is reset by exec: the processes the tests start get Python's own again.)
import signal  # noqa: E402

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from hashlib import sha1  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
# The real release files live beside the checkout (../shared/data) on development and CI
# machines; MEDPROBE_SHARED_DATA points elsewhere. They are never copied into the repository.
SHARED_DATA = Path(os.environ.get("MEDPROBE_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with the reason when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the release files: set MEDPROBE_SHARED_DATA or put them at ../shared/data ({path} is absent)")
    return path


@pytest.fixture(scope="session")
def embedding_cache_base(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("embedding_cache")


@pytest.fixture(autouse=True)
def _embedding_cache_per_test(embedding_cache_base, monkeypatch, request) -> None:
    """Every test gets its own on-disk embedding cache (created only if used), never the user's HF
    cache: a probe loaded from files caches its embeddings there (medprobe.contrastive.embedding_cache),
    and subprocesses inherit the variable."""
    monkeypatch.setenv(
        "MEDPROBE_EMBEDDING_CACHE", str(embedding_cache_base / sha1(request.node.nodeid.encode()).hexdigest()[:16])
    )
    monkeypatch.delenv("MEDPROBE_EMBEDDING_CACHE_MAX_GB", raising=False)


@pytest.fixture(scope="session")
def medlama_release_dir() -> Path:
    return shared_path("medlama")


@pytest.fixture(scope="session")
def built_medlama(medlama_release_dir, tmp_path_factory) -> Path:
    """The real MedLAMA built once per session into a Hub folder."""
    from medprobe.building.build import build

    out = tmp_path_factory.mktemp("medlama_hub")
    build("medlama", out, data_dir=str(medlama_release_dir))
    return out


@pytest.fixture(scope="session")
def synthetic_medlama_hub(tmp_path_factory) -> Path:
    """The synthetic MedLAMA release (made-up rows) built once per session into a Hub folder.

    Shared and read-only: a test that changes files works on a copy.
    """
    from medprobe.building.build import build
    from synthetic_medlama import BUILD_PARAMS, write_release

    root = tmp_path_factory.mktemp("synthetic_medlama")
    build("medlama", root / "hub", data_dir=str(write_release(root / "release")), params=BUILD_PARAMS)
    return root / "hub"


@pytest.fixture(scope="session")
def acc_at_k():
    import evaluate

    from medprobe.resources import metric_path

    return evaluate.load(metric_path("acc_at_k"))


@pytest.fixture(scope="session")
def disknE_annotation_dir() -> Path:
    return shared_path("disknE", "annotation_files")


@pytest.fixture(scope="session")
def synthetic_disknE(disknE_annotation_dir, tmp_path_factory):
    """A DisKnE data_dir with made-up MedNLI, MEDIQA-NLI and MRCONSO for the real annotation files."""
    from synthetic_disknE import write_data_dir

    paths = sorted(disknE_annotation_dir.glob("DisknE_*_annotation.csv"))
    return write_data_dir(tmp_path_factory.mktemp("disknE_data"), paths)


@pytest.fixture(scope="session")
def built_disknE(synthetic_disknE, tmp_path_factory) -> Path:
    """The four DisKnE variants built once per session from the synthetic data_dir."""
    from medprobe.building.build import build

    out = tmp_path_factory.mktemp("disknE_hub")
    build("disknE", out, data_dir=str(synthetic_disknE.data_dir))
    return out


@pytest.fixture(scope="session")
def minilm_runs(tmp_path_factory) -> tuple[Path, Path]:
    """MiniLM on the shipped sample's hard config, all layers and the first 3 (about 7 s each on 2 CPU cores); shared by
    the compare and leaderboard tests."""
    from medprobe.cli import main

    sample = REPO_ROOT / "medprobe" / "demo_data" / "medlama_sample"
    folder = tmp_path_factory.mktemp("minilm_runs")
    common = ["probe", "--prober", "contrastive", "--dataset", str(sample), "--config", "hard", "--model", "minilm", "--no-cache"]
    assert main([*common, "--out", str(folder / "all.json")]) == 0
    assert main([*common, "--layers", "3", "--out", str(folder / "layers3.json")]) == 0
    return folder / "all.json", folder / "layers3.json"
