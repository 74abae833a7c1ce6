"""Path-like arguments checked on disk first: a typo'd folder is one line naming it, at once, never a Hub lookup.

    check_local_path("out/medlamma", "--dataset")   # MissingPath: --dataset out/medlamma does not exist; did you mean out/medlama?
    dataset_source("bigbio/medlama", "--dataset")   # None: not a local path; offline and uncached it is one line too

An argument *can be a local path* when it exists, starts with `.`, `/` or `~`, has more slashes than a
Hub id (`org/name`), or a folder it names on the way exists (`out/medlamma` when `out/` is there). Only
an argument that cannot be one is tried as a Hub id; with the Hub offline (HF_HUB_OFFLINE or
HF_DATASETS_OFFLINE, or no network) an id that is not in the local cache fails here, in milliseconds,
rather than after datasets' rounds of retries. Nothing here imports datasets, transformers or torch.
"""

from __future__ import annotations

import difflib
import functools
import os
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

from medprobe.contracts import UserError


class MissingPath(UserError, FileNotFoundError):
    """A path argument that does not exist (a FileNotFoundError too, for callers that catch that)."""


def could_be_local(value: str) -> bool:
    """Whether `value` can only be meant as a local path (see the module docstring); a bare name cannot."""
    if not value or "://" in value:  # a URL (hf://, https://) is for the library that reads it
        return False
    if value.startswith((".", "/", "~")) or value.count("/") > 1:
        return True
    if Path(value).exists():
        return True
    head, sep, _ = value.partition("/")
    return bool(sep) and Path(head).exists()  # `org/name` is a Hub id unless ./org exists


def check_local_path(value: str, option: str = "", expected: str = "") -> Path:
    """`value` as a Path that exists, or MissingPath: one line naming it, the nearest folder that exists (or a
    close match) and `expected` (what to give instead)."""
    path = Path(value).expanduser()
    if path.exists():
        return path
    raise MissingPath(missing_message(value, option, expected))


def missing_message(value: str, option: str, expected: str = "") -> str:
    """`OPTION VALUE does not exist; did you mean out/medlama?`, else the nearest folder that exists, what it
    holds and `expected`. Paths are shown as the user wrote them (`~` and relative paths kept)."""
    named = f"{option}{value}" if option.endswith("=") else f"{option} {value}" if option else value
    match = close_match(value)
    if match:
        return f"{named} does not exist; did you mean {match}?"
    return f"{named} does not exist ({nearest_folder(value)})" + (f"; {expected}" if expected else "")


def existing_prefix(value: str) -> tuple[list[str], int]:
    """The parts of `value` and how many of them, from the start, name something that exists."""
    parts = value.rstrip("/").split("/")
    known = 1 if value.startswith("/") else 0  # "/a/b".split("/") begins with ""
    while known < len(parts) and Path(os.path.expanduser("/".join(parts[: known + 1]) or "/")).exists():
        known += 1
    return parts, known


def shown_prefix(value: str, parts: list[str], known: int) -> str:
    return "/".join(parts[:known]) or ("/" if value.startswith("/") else ".")


def close_match(value: str) -> str | None:
    """`value` with its first missing part replaced by a close match in the folder above it (`out/medlamma` ->
    `out/medlama`; the rest of the path kept when that exists), or None."""
    parts, known = existing_prefix(value)
    folder = Path(os.path.expanduser(shown_prefix(value, parts, known)))
    if known >= len(parts) or not folder.is_dir():
        return None
    names = [entry.name for entry in folder.iterdir()]
    found = difflib.get_close_matches(parts[known], names, n=1, cutoff=0.75)
    if not found:
        return None
    whole = "/".join([*parts[:known], found[0], *parts[known + 1 :]])
    return whole if Path(os.path.expanduser(whole)).exists() else "/".join([*parts[:known], found[0]])


def nearest_folder(value: str) -> str:
    """`the nearest folder that exists is out: it holds a/, b.json`, or the file that stands where a folder was expected."""
    parts, known = existing_prefix(value)
    shown = shown_prefix(value, parts, known)
    folder = Path(os.path.expanduser(shown))
    if not folder.is_dir():
        return f"{shown} is a file, not a folder"
    names = sorted(entry.name for entry in folder.iterdir() if not entry.name.startswith("."))
    return f"the nearest folder that exists is {shown}: it holds {listing(folder, names)}"


def listing(folder: Path, names: list[str], most: int = 5) -> str:
    """`a/, b.json and 3 more` (folders marked with a slash), or `nothing`."""
    if not names:
        return "only hidden files" if any(folder.iterdir()) else "nothing"
    marked = [name + ("/" if (folder / name).is_dir() else "") for name in names[:most]]
    return ", ".join(marked) + (f" and {len(names) - most} more" if len(names) > most else "")


# --- Hub ids -------------------------------------------------------------------------------------


def dataset_source(value: str, option: str = "--dataset") -> Path | None:
    """The local folder `value` names (checked to exist), or None for a Hub dataset id that can be loaded.

    A Hub id that is not in the local caches while the Hub is offline or cannot be reached is a UserError
    saying what to do, before datasets tries (its retries take ~25 s with no network)."""
    if could_be_local(value):
        return check_local_path(value, option, "give a folder written by `medprobe build BENCHMARK --out DIR`")
    if dataset_cached(value):
        return None
    why = hub_offline_reason("HF_DATASETS_OFFLINE")
    if why:
        raise UserError(
            f"{option} {value} is not a local folder, and as a Hub dataset id it is not in the local cache and cannot be "
            f"downloaded ({why}): build it with `medprobe build BENCHMARK --out DIR` and pass {option} DIR, or run "
            f"`hf download --repo-type dataset {value}` where the Hub is reachable"
        )
    return None


def dataset_cached(repo_id: str) -> bool:
    """Whether the Hub cache or datasets' own cache holds `repo_id` (what an offline load can use)."""
    from huggingface_hub import constants

    hub = Path(constants.HF_HUB_CACHE) / f"datasets--{repo_id.replace('/', '--')}" / "snapshots"
    prepared = Path(os.environ.get("HF_DATASETS_CACHE") or Path(constants.HF_HOME) / "datasets") / repo_id.replace("/", "___")
    return (hub.is_dir() and any(hub.iterdir())) or prepared.is_dir()


def hub_offline_reason(library_switch: str = "") -> str:
    """Why the Hub cannot be used now (`HF_HUB_OFFLINE is set`, `huggingface.co cannot be reached from here`),
    or "" when it can. `library_switch` is a library's own offline variable (datasets' HF_DATASETS_OFFLINE),
    which overrides HF_HUB_OFFLINE for that library when it is set, as the library reads it."""
    from huggingface_hub import constants

    switch = os.environ.get(library_switch) if library_switch else None
    if switch is not None and switch.upper() in TRUE_VALUES:
        return f"{library_switch} is set"
    if switch is None and constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    if not hub_host_reachable():
        return f"{hub_shown()} cannot be reached from here"
    return ""


TRUE_VALUES = ("1", "ON", "YES", "TRUE")  # huggingface_hub's and datasets' ENV_VARS_TRUE_VALUES
PROBE_S = 2.0  # the whole reachability probe, name lookup included: a first-contact failure stays under 3 s


def hub_host() -> str:
    from huggingface_hub import constants

    return urlparse(constants.ENDPOINT).hostname or "huggingface.co"


def hub_port() -> int:
    """The port of the Hub's endpoint (HF_ENDPOINT may name one): a probe of 443 says nothing about another."""
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    return url.port or (80 if url.scheme == "http" else 443)


def hub_shown() -> str:
    """The Hub's host as a message names it: `huggingface.co`, or `127.0.0.1:8080` when HF_ENDPOINT gives a port."""
    port = hub_port()
    return hub_host() if port in (80, 443) else f"{hub_host()}:{port}"


def hub_host_reachable() -> bool:
    return host_reachable(hub_host(), hub_port())


@functools.lru_cache(maxsize=8)
def host_reachable(host: str, port: int = 443, timeout: float = PROBE_S) -> bool:
    """Whether a TCP connection to `host`:`port` opens within `timeout` seconds, name lookup included; asked
    once per host and process. Behind a proxy a direct connection proves nothing, so there the answer is True
    and the download itself decides."""
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    deadline = time.monotonic() + timeout
    for address in resolved(host, port, timeout):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            with socket.create_connection(address[:2], timeout=left):
                return True
        except OSError:
            continue
    return False


def resolved(host: str, port: int, timeout: float) -> list[tuple]:
    """The socket addresses of `host`:`port`, or [] when the lookup fails or takes longer than `timeout`.

    getaddrinfo takes no timeout (a resolver that does not answer holds it 5 s per try and name server), so it
    runs in a daemon thread that is abandoned when the time is up."""
    found: list[tuple] = []

    def lookup() -> None:
        try:
            found.extend(info[4] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError):
            pass

    thread = threading.Thread(target=lookup, name=f"medprobe-lookup-{host}", daemon=True)
    thread.start()
    thread.join(timeout)
    return [] if thread.is_alive() else list(found)
