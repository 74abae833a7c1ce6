"""`medprobe build BENCHMARK --sample --out DIR`: a sample shipped with medprobe, copied to a folder of the user's.

The documentation probes `out/medlama`; without the MedLAMA release (a download, or a licensed copy) a new user
gets that folder from the sample medprobe ships, offline, in one command:

    medprobe build medlama --sample --out out/medlama    # 108 textbook facts in MedLAMA's format: NOT MedLAMA

The copy is written like every output folder (medprobe.atomic_folder.staged_folder: staged beside DIR, swapped in
whole), and replaces only an absent or empty DIR or an unchanged copy of the same sample; anything else in DIR is
refused, naming it, unless --overwrite. Runs on the copy are still known for a sample's (their data files have
the sample's bytes: medprobe.hub.data_check), so publish and the leaderboard keep them apart from the benchmark.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from medprobe.atomic_folder import staged_folder
from medprobe.contracts import UserError


def sample_of(benchmark: str) -> tuple[Path, str]:
    """(the folder, what it is in words) of the sample shipped with medprobe for `benchmark`: the one its profile
    plan probes without --data-dir."""
    from medprobe.registry import registry
    from medprobe.resources import shipped_sample

    for entry in registry().tasks.values():
        plan = entry.profile
        if entry.benchmark == benchmark and plan is not None and plan.without_data == "sample" and plan.sample:
            what = plan.data_text.split(" (give --data-dir")[0]  # the profile's hint on its own option is not build's
            return shipped_sample(plan.sample), what or f"a sample of {benchmark} shipped with medprobe"
    shipped = sorted(
        {e.benchmark for e in registry().tasks.values() if e.profile is not None and e.profile.without_data == "sample"}
    )
    raise UserError(
        f"--sample: no sample of {benchmark} ships with medprobe (samples: {', '.join(shipped) or 'none'}); build it "
        f"with `medprobe build {benchmark} --out DIR`"
    )


def sample_files(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file of a sample: what an unchanged copy holds."""
    from medprobe.digests import sha256_file

    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def write_sample(benchmark: str, out: str | Path, *, overwrite: bool = False) -> tuple[Path, str]:
    """Copy the sample of `benchmark` to `out` (see the module); (the folder written, what it is in words)."""
    from medprobe.atomic import refuse_unrecorded
    from medprobe.digests import sha256_file

    sample, what = sample_of(benchmark)
    files = sample_files(sample)

    def refuse(folder: Path) -> None:  # an unchanged copy of this sample is replaced; anything else is the user's
        copied = {name: digest for name, digest in files.items() if (folder / name).is_file()}
        unchanged = {name: digest for name, digest in copied.items() if sha256_file(folder / name) == digest}
        refuse_unrecorded(folder, unchanged, command=f"build {benchmark} --sample")

    if not overwrite:
        refuse(Path(out))  # now, naming --out as given (checked again under the lock)
    with staged_folder(out, "build", refuse=refuse, overwrite=overwrite) as folder:
        shutil.copytree(sample, folder.staged, dirs_exist_ok=True, copy_function=shutil.copyfile)  # not the package's modes
    return Path(out), what
