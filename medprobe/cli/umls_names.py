"""`medprobe umls-names`: the small CUI-to-names TSV that the DisKnE build reads instead of MRCONSO.RRF.

MRCONSO.RRF is several GB; DisKnE needs the English names of a few hundred CUIs. This streams
the file once (with a progress bar) and keeps those names, in the format the DisKnE builder
reads (its readers and writer are used here, so the two cannot drift apart). The TSV is UMLS
content: keep it with your other licensed files, never in a repository.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from medprobe.atomic import atomic_output, check_writable
from medprobe.contracts import UserError
from medprobe.local_paths import check_local_path
from medprobe.resources import load_builder_module


def add_umls_names_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "umls-names",
        help="extract the CUI-to-names TSV that the DisKnE build needs from MRCONSO.RRF",
        description=(
            "Stream MRCONSO.RRF (UMLS Metathesaurus, META/MRCONSO.RRF) and write the English names of "
            "the CUIs in the DisKnE annotation files to a small TSV; put it in the DisKnE data folder "
            "(medprobe build disknE --data-dir DIR) instead of MRCONSO.RRF."
        ),
    )
    parser.add_argument("mrconso", help="path to MRCONSO.RRF")
    parser.add_argument(
        "--cuis-from",
        action="append",
        metavar="PATH",
        help=(
            "an annotation CSV or a folder of them (repeatable; default: the four official DisKnE annotation files, "
            "downloaded at the pinned commit)"
        ),
    )
    parser.add_argument(
        "--out", default="umls_names.tsv", help="TSV to write (default: umls_names.tsv; the build looks for this name)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run_umls_names)


def annotation_paths(sources: list[str] | None) -> list[str]:
    """The annotation CSVs named by --cuis-from, or the official ones (downloaded and cached)."""
    disknE = load_builder_module("disknE")
    if not sources:
        from datasets.utils.file_utils import cached_path

        paths = []
        for variant in disknE.VARIANTS:
            url = f"{disknE.ANNOTATION_URL}/{disknE.annotation_file_name(variant)}"
            try:
                paths.append(cached_path(url))
            except Exception as err:  # offline or blocked: say what to do instead
                raise ConnectionError(
                    f"could not download {url} ({err.__class__.__name__}); give the annotation files with --cuis-from DIR"
                ) from err
        return paths
    paths = []
    for source in sources:
        path = Path(source)
        if path.is_dir():
            found = sorted(str(p) for p in path.glob("*.csv"))
            if not found:
                raise FileNotFoundError(f"--cuis-from {source}: the folder holds no .csv annotation file")
            paths.extend(found)
        elif path.is_file():
            paths.append(str(path))
        else:
            check_local_path(source, "--cuis-from", "give the DisKnE annotation CSVs or their folder")
    return paths


def run_umls_names(args: argparse.Namespace) -> int:
    mrconso = check_local_path(args.mrconso, "", "give the UMLS Metathesaurus file META/MRCONSO.RRF of your UMLS release")
    disknE = load_builder_module("disknE")  # imports datasets (a second): after the path is known to exist
    if not mrconso.is_file():
        raise UserError(f"{mrconso} is a folder; give the UMLS Metathesaurus file META/MRCONSO.RRF")
    check_writable(args.out, "--out")  # before a multi-GB read, not after it
    paths = annotation_paths(args.cuis_from)
    try:
        cuis = disknE.annotation_cuis(paths)
        names = disknE.read_mrconso(mrconso, cuis, progress=not args.no_progress)
    except disknE.DisknEInputError as err:  # the builder cannot import medprobe.contracts; its message names file and line
        raise UserError(str(err)) from err
    with atomic_output(args.out) as temp:  # a failed or interrupted write keeps the previous TSV
        rows = disknE.write_names_tsv(names, temp)
    print(
        f"{len(cuis)} CUIs in {len(paths)} annotation file(s); {len(names)} have English names in {mrconso.name}: "
        f"wrote {rows:,} names to {args.out}"
    )
    missing = sorted(cuis - set(names))
    if missing:
        print(
            f"no English name for {len(missing)} CUI(s): {', '.join(missing[:20])}{' ...' if len(missing) > 20 else ''} "
            "(the build will stop on rows that use them)"
        )
    return 0
