"""`medprobe cache verify`: re-encode a sample of Contrastive-Probe's embedding cache and drop the chunks that
disagree (medprobe.contrastive.cache_verify)."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

DEFAULT_SAMPLE = 256  # medprobe.contrastive.cache_verify.DEFAULT_SAMPLE (not imported: it loads torch, and --help should not)

VERIFY_EPILOG = """\
exit status:
  0  nothing disagreed (spaces that could not be checked here are listed as skipped)
  1  chunks were dropped: their vectors disagreed with the model's, or they were damaged
  2  a user error: no cache, an unknown model, a model folder missing, a chunk that could not be dropped
     (then nothing was dropped)

A chunk's checksum catches torn writes, bit rot and mixed chunks on every read; a chunk whose vectors were
replaced and whose checksum was computed anew passes it, and only re-encoding tells (docs/scaling.md).
"""


def sample_size(text: str) -> int | None:
    """--sample: a positive number of texts, or `all` (None)."""
    if text == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive number of texts or 'all', got {text!r}")
    return value


def run_verify(args: argparse.Namespace) -> int:
    from medprobe.local_paths import check_local_path
    from medprobe.models import resolve_model

    if args.cache:  # typo'd paths: one line now, before transformers loads (seconds)
        check_local_path(args.cache, "--cache", "give the embedding cache folder")
    if args.model:
        resolve_model(args.model)
    from transformers.utils import logging as transformers_logging

    from medprobe.contrastive.cache_verify import verify_cache
    from medprobe.digests import cache_root

    root = Path(args.cache).expanduser() if args.cache else cache_root()
    bars = transformers_logging.is_progress_bar_enabled()
    if args.no_progress:  # transformers' own bars too (loading the weights)
        transformers_logging.disable_progress_bar()
    try:
        report = verify_cache(root, sample=args.sample, seed=args.seed, model=args.model, show_progress=not args.no_progress)
    finally:
        if bars:
            transformers_logging.enable_progress_bar()
    print(report.summary())
    return 1 if report.dropped else 0


def add_cache_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "cache",
        help="check Contrastive-Probe's embedding cache against the models (verify)",
        description=(
            "Contrastive-Probe keeps the [CLS] vectors it encodes on disk ($MEDPROBE_EMBEDDING_CACHE, by default "
            "$HF_HOME/medprobe/embeddings), so another run of the same model reads them. `verify` re-encodes a "
            "sample of them with their models and drops what disagrees."
        ),
    )
    commands = parser.add_subparsers(title="action", metavar="ACTION", required=True)
    verify = commands.add_parser(
        "verify",
        help="re-encode a seeded sample of cached texts per model and drop the chunks whose vectors disagree",
        description=textwrap.fill(
            "For each model space in the cache (a model at one --layers, --dtype and device), load the model it was "
            "encoded with, re-encode a seeded sample of its cached texts the way a probe does (batched), and compare "
            "each vector with the cached one (relative difference within what the same model on the same device gives "
            "run to run). Every chunk holding a vector that disagrees is dropped, all together after the whole check "
            "(or none), one line each; the next probe encodes those texts again. A space whose model is not available "
            "here (its folder gone, a Hub model not in the local Hub cache, another GPU or library version) is "
            "skipped with one line saying why. Nothing is downloaded.",
            width=100,
        ),
        epilog=VERIFY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verify.add_argument(
        "--sample",
        type=sample_size,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"texts to re-encode per space, drawn from every chunk in turn, or 'all' (default: {DEFAULT_SAMPLE})",
    )
    verify.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sample (default: 0)")
    verify.add_argument(
        "--model",
        metavar="M",
        help="check only this model's spaces, loaded from here (a folder, a Hub id in the local Hub cache, or 'minilm'); "
        "default: every space, each loaded from where its runs loaded it",
    )
    verify.add_argument(
        "--cache", metavar="DIR", help="the cache folder (default: $MEDPROBE_EMBEDDING_CACHE, else $HF_HOME/medprobe/embeddings)"
    )
    verify.add_argument("--no-progress", action="store_true", help="no progress bars")
    verify.set_defaults(func=run_verify)
