"""The wheel of the medprobe that is running: what a leaderboard Space installs while medprobe is not on PyPI.

    wheel = running_wheel(Path("staging"))   # staging/medprobe-0.1.0-py3-none-any.whl

Two ways to have it, one for each way medprobe can be running:

- from a source tree (a clone, or an editable install of one: the package's folder sits beside a
  pyproject.toml that names medprobe), `pip wheel --no-deps` builds it from that tree as it is now, with
  the project's build backend (hatchling: without build isolation where it is installed, so offline;
  else pip fetches it);
- from an installed wheel (site-packages), it is packed again from the installed files its RECORD lists:
  the same modules, resources and metadata; the installer makes the `medprobe` script again from
  entry_points.txt. What the installer added (INSTALLER, REQUESTED, direct_url.json, compiled files) is
  left out and RECORD is written anew with each file's sha256.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from medprobe.atomic import atomic_output
from medprobe.hub.checks import PublishError

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # medprobe/ as it is imported now
INSTALLER_FILES = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}  # added by an installer; RECORD is rewritten


def source_tree() -> Path | None:
    """The source tree medprobe is imported from (its pyproject.toml names medprobe), None for an installed wheel."""
    pyproject = PACKAGE_DIR.parent / "pyproject.toml"
    if not pyproject.is_file():
        return None
    named = re.search(r'(?m)^name\s*=\s*"medprobe"\s*$', pyproject.read_text(encoding="utf-8"))  # (no tomllib on 3.10)
    return PACKAGE_DIR.parent if named else None


def running_wheel(out_dir: Path) -> Path:
    """The wheel of the running medprobe, written into `out_dir`; its path."""
    root = source_tree()
    return build_from_source(root, out_dir) if root is not None else repack_installed(out_dir)


def build_from_source(root: Path, out_dir: Path) -> Path:
    """`pip wheel --no-deps ROOT`: the wheel the project's build backend makes of the tree as it is."""
    isolation = ["--no-build-isolation"] if has_hatchling() else []  # hatchling here: built offline, nothing fetched
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", *isolation, "--wheel-dir", str(out_dir), str(root)]
    done = subprocess.run(command, capture_output=True, text=True)
    built = sorted(out_dir.glob("medprobe-*.whl"))
    if done.returncode != 0 or len(built) != 1:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PublishError(f"could not build the wheel of medprobe from {root} (`{' '.join(command)}`): {last}")
    return built[0]


def has_hatchling() -> bool:
    try:
        importlib.metadata.version("hatchling")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def installed_distribution() -> importlib.metadata.Distribution:
    """The installed distribution whose files are the medprobe running now (not another copy on the path)."""
    try:
        dist = importlib.metadata.distribution("medprobe")
    except importlib.metadata.PackageNotFoundError as err:
        raise PublishError(f"medprobe runs from {PACKAGE_DIR} without a pyproject.toml or an installed distribution") from err
    init = Path(dist.locate_file("medprobe/__init__.py")).resolve()
    if init != PACKAGE_DIR / "__init__.py" or not dist.files:
        raise PublishError(
            f"the installed medprobe ({init.parent}) is not the one running ({PACKAGE_DIR}): cannot pack its wheel"
        )
    return dist


def repack_installed(out_dir: Path) -> Path:
    """The installed medprobe's files (its RECORD) packed again as a wheel."""
    dist = installed_distribution()
    info = next(path for path in dist.files if path.name == "METADATA").parent.as_posix()
    tag = next(line.split(":", 1)[1].strip() for line in dist.read_text("WHEEL").splitlines() if line.startswith("Tag:"))
    wheel = out_dir / f"{info.removesuffix('.dist-info')}-{tag}.whl"
    record = []
    with atomic_output(wheel) as temp, zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(dist.files, key=lambda p: p.as_posix()):
            name = path.as_posix()
            if ".." in path.parts or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue  # the script in bin/ (made again from entry_points.txt) and compiled files
            if path.parent.as_posix() == info and path.name in INSTALLER_FILES:
                continue
            data = Path(dist.locate_file(path)).read_bytes()
            archive.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return wheel
