"""What a run, a dataset card or a paper using medprobe must cite, as BibTeX.

The entries are data: `hub_cards/citations.bib` (shipped in the wheel with the card templates).
Which benchmark and which prober cite which entries is in the registry (`citations=` of every
`TaskEntry` and `ProberEntry`, medprobe/registry.py); medprobe's own entry (`MEDPROBE`) is cited
by every run and every card. `medprobe cite NAME ...` prints them (medprobe/cli/cite.py).

    citation_keys("medlama", "contrastive")  # ['meng-etal-2022-rewire', 'bodenreider-2004-unified', 'medprobe']
    bibtex(citation_keys("medlama", "contrastive"))  # the three entries, as in the .bib file

Light on purpose (the registry and the standard library only): the run loop puts the keys into
every results JSON, and `medprobe --help` imports the CLI modules.
"""

from __future__ import annotations

from functools import cache

from medprobe.contracts import UserError
from medprobe.registry import PROBERS, TASKS, prober_entry, task_entry
from medprobe.resources import card_template

BIB_FILE = "citations.bib"  # in hub_cards/
MEDPROBE = "medprobe"  # the key of medprobe's own (software) entry


@cache
def entries() -> dict[str, str]:
    """Key -> the entry's BibTeX text as written in the .bib file, in file order."""
    path = card_template(BIB_FILE)
    found: dict[str, str] = {}
    current: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("@"):
            if current:
                raise UserError(f"{path}:{number}: an entry starts before the one above it ends with a '}}' line")
            current = [line]
        elif current:
            current.append(line)
            if line == "}":
                key = current[0].partition("{")[2].partition(",")[0].strip()
                if not key or key in found:
                    raise UserError(f"{path}: the entry starting {current[0]!r} has {'no' if not key else 'a duplicate'} key")
                found[key] = "\n".join(current)
                current = []
    if current:
        raise UserError(f"{path}: the entry starting {current[0]!r} has no closing '}}' line")
    return found


def citation_keys(task: str | None = None, prober: str | None = None) -> list[str]:
    """The keys a run of `task` with `prober` must cite: the task's, the prober's, then medprobe's.

    Either may be None (e.g. a card cites its benchmark's task keys only); each key appears once.
    An unknown task or prober name raises KeyError, as `task_entry` and `prober_entry` do.
    """
    keys = [*(task_entry(task).citations if task else ()), *(prober_entry(prober).citations if prober else ()), MEDPROBE]
    return list(dict.fromkeys(keys))


def benchmark_keys(benchmark: str) -> list[str]:
    """The keys a dataset card of `benchmark` cites: those of every task that reads it, then medprobe's."""
    keys = [key for entry in TASKS.values() if entry.benchmark == benchmark for key in entry.citations]
    return list(dict.fromkeys([*keys, MEDPROBE]))


def bibtex(keys: list[str] | tuple[str, ...]) -> str:
    """The BibTeX entries of `keys`, in that order, separated by blank lines."""
    known = entries()
    unknown = [key for key in keys if key not in known]
    if unknown:
        raise UserError(f"no BibTeX entry for {', '.join(unknown)} in hub_cards/{BIB_FILE}; known: {', '.join(known)}")
    return "\n\n".join(known[key] for key in dict.fromkeys(keys))


def citable_names() -> list[str]:
    """What `medprobe cite` accepts: benchmark and task names, then prober names, as the registry has them."""
    names = [name for entry in TASKS.values() for name in (entry.benchmark, entry.name)]
    return list(dict.fromkeys([*names, *PROBERS]))


def keys_for_names(names: list[str]) -> list[str]:
    """The keys of benchmarks, tasks and probers named by a user, each once, then medprobe's."""
    known = citable_names()
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UserError(f"cannot cite {', '.join(map(repr, unknown))}: not a benchmark or prober; known: {', '.join(known)}")
    keys: list[str] = []
    for name in names:
        if name in PROBERS:
            keys += prober_entry(name).citations
        if name in TASKS:
            keys += task_entry(name).citations
        if name not in PROBERS and name not in TASKS:  # a benchmark that no task is named after: its tasks' keys
            keys += benchmark_keys(name)
    return list(dict.fromkeys([*keys, MEDPROBE]))
