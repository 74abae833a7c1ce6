"""What Contrastive-Probe's rewiring needs before (and without) the Trainer: the paper's settings, the
report of a rewiring, and a release's rewiring corpora (found, or downloaded once).

Kept apart from medprobe.contrastive.rewiring, which imports transformers' Trainer (seconds to import),
so that a probe without rewiring never loads it.
"""

from __future__ import annotations

import functools
import os
import urllib.request
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from urllib.parse import urlparse

from medprobe.atomic import atomic_output
from medprobe.contracts import UserError
from medprobe.contrastive.pairs import CorpusStats, check_corpus

# The paper's rewiring settings (Meng, Liu et al. 2022; released script mirror_sentence_pubmedbert.sh).
PAPER_SETTINGS = {
    "max_steps": 150,  # the released code probes the step-150 checkpoint (the paper says 200)
    "per_device_train_batch_size": 192,
    "learning_rate": 2e-5,
    "weight_decay": 0.01,
    "lr_scheduler_type": "constant",  # AdamW without a scheduler
    "warmup_steps": 0,
    "max_grad_norm": 0.0,  # the released code does not clip gradients
    "seed": 33,
}
TEMPERATURE = 0.04
MAX_LENGTH = 48
MASK_RATIO = 0.5


@dataclass
class RewiringReport:
    """What a rewiring run did: the corpus counts, the settings, the losses, the time."""

    corpus: CorpusStats
    steps: int
    seconds: float
    losses: list[tuple[int, float]] = field(default_factory=list)  # (step, mean loss since the last log)
    settings: dict = field(default_factory=dict)

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0


# --- a release's rewiring corpora -----------------------------------------------------------------------

# A benchmark's release may ship rewiring corpora (the MedLAMA release does: data/elicit_corpora/). Which
# ones, at which commit and where, is the benchmark's own knowledge: its builder module (the one its
# registry entry names) declares them as REWIRING_CORPORA, and this module only finds, downloads and
# caches the files such a declaration names.


@dataclass(frozen=True)
class ReleaseCorpora:
    """The rewiring corpora of one benchmark's release, as its builder module declares them."""

    benchmark: str  # the registry's benchmark whose builder declares them (it names the cache folder)
    release: str  # the release in words, for messages
    commit: str  # the pinned commit they are downloaded at
    url: str  # the URL of their folder at that commit
    folder: str  # the folder of a release copy that holds them
    names: tuple[str, ...]


def declared_corpora(benchmark: str) -> ReleaseCorpora | None:
    """The REWIRING_CORPORA that the builder module of `benchmark` declares, or None."""
    from medprobe.registry import benchmark_entry
    from medprobe.resources import load_builder_module

    target = benchmark_entry(benchmark).builder  # a plugin's "module:Class", or "" for the shipped builder
    module = import_module(target.partition(":")[0]) if target else load_builder_module(benchmark)
    declared = getattr(module, "REWIRING_CORPORA", None)
    return ReleaseCorpora(benchmark=benchmark, **{**declared, "names": tuple(declared["names"])}) if declared else None


@functools.cache
def release_corpora() -> tuple[ReleaseCorpora, ...]:
    """Every benchmark's release corpora, in registry order (builder modules are read once, on first use)."""
    from medprobe.registry import benchmarks

    return tuple(corpora for corpora in map(declared_corpora, benchmarks()) if corpora is not None)


def corpora_named(name: str) -> ReleaseCorpora | None:
    """The release corpora that hold a corpus called `name`, or None: `name` is not a release corpus."""
    return next((corpora for corpora in release_corpora() if name in corpora.names), None)


def corpus_path(corpus: str | Path) -> Path:
    """The rewiring corpus file for `--rewire-corpus`: a text file, or a release corpus by name.

    - a file (one sentence a line): used as it is;
    - `DIR/NAME`, NAME a release corpus (e.g. MedLAMA's pubmed_sents_no_punkt_10k_0) and DIR a copy of
      that release (for MedLAMA the `--data-dir` of `medprobe build medlama`, or the repository's root
      or data/ folder): read from the release's corpus folder in DIR, beside DIR, or in DIR/data;
    - NAME alone: downloaded once at the pinned commit into the medprobe cache
      ($XDG_CACHE_HOME/medprobe, by default ~/.cache/medprobe) and read from there afterwards.
    """
    path = Path(corpus).expanduser()
    corpora = None if path.is_file() else corpora_named(path.name)
    if corpora is None:
        return check_corpus(path)
    if str(corpus) != path.name:  # DIR/NAME: a release folder the user has
        return from_release_folder(corpora, path.parent, path.name)
    cached = corpus_cache(corpora) / path.name
    return cached if cached.is_file() else download_corpus(corpora, path.name, cached)


def from_release_folder(corpora: ReleaseCorpora, folder: Path, name: str) -> Path:
    places = [
        folder / corpora.folder / name,
        folder.parent / corpora.folder / name,
        folder / "data" / corpora.folder / name,
    ]
    for place in places:
        if place.is_file():
            return place
    what = "does not exist" if not folder.is_dir() else f"holds no {name} (looked for {', '.join(map(str, places))})"
    raise UserError(
        f"--rewire-corpus {folder / name}: the folder {folder} {what}. Give the {corpora.release} folder that has "
        f"{corpora.folder}/ ({corpora.url}/{name} at the pinned commit), the corpus file itself, or the name alone "
        f"(--rewire-corpus {name}) to download it"
    )


def corpus_cache(corpora: ReleaseCorpora) -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "medprobe" / f"{corpora.benchmark}-{corpora.commit[:12]}" / corpora.folder


def download_corpus(corpora: ReleaseCorpora, name: str, target: Path) -> Path:
    """Download the release corpus `name` at the pinned commit to `target` (atomically: an interrupted
    download leaves nothing behind); offline, one error naming the URL and what to pass instead."""
    from medprobe.models import host_reachable

    url = f"{corpora.url}/{name}"
    instead = (
        f"download {url} where the network is reachable and pass the file (--rewire-corpus FILE), or pass it "
        f"from a {corpora.release} folder that has {corpora.folder}/ (--rewire-corpus DIR/{name})"
    )
    offline = [
        flag
        for flag in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
        if os.environ.get(flag, "").upper() in {"1", "ON", "YES", "TRUE"}
    ]
    host = urlparse(url).hostname or ""
    if offline or not host_reachable(host):
        why = f"{' and '.join(offline)} set" if offline else f"{host} cannot be reached from here"
        raise UserError(
            f"--rewire-corpus {name} is a {corpora.release} corpus that is not in {target.parent} yet "
            f"and cannot be downloaded ({why}): {instead}"
        )
    print(f"downloading the rewiring corpus {name} from {url}")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, atomic_output(target) as temp:
            temp.write_bytes(response.read())
    except OSError as err:  # HTTP errors, time-outs, a dropped connection
        raise UserError(f"could not download --rewire-corpus {name} from {url} ({err}): {instead}") from err
    return target
