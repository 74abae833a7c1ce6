"""What a run, a dataset card or a paper using medprobe must cite, as BibTeX.

The entries are data: `hub_cards/citations.bib` (shipped in the wheel with the card templates), and
a plugin's own BibTeX file, which its registry entries name (`bibtex="package:file.bib"`). Which
benchmark and which prober cite which entries is in the registry (`citations=` of every `TaskEntry`
and `ProberEntry`, medprobe/registry.py); medprobe's own entry (`MEDPROBE`) is cited by every run and
every card. `medprobe cite NAME ...` prints them (medprobe/cli/cite.py).

    citation_keys("medlama", "contrastive")  # ['meng-etal-2022-rewire', 'bodenreider-2004-unified', 'medprobe']
    bibtex(citation_keys("medlama", "contrastive"))  # the three entries, as in the .bib file

Light on purpose (the registry and the standard library only): the run loop puts the keys into
every results JSON, and `medprobe --help` imports the CLI modules.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from medprobe.contracts import UserError
from medprobe.registry import ProberEntry, TaskEntry, registry
from medprobe.resources import card_template, package_resource

BIB_FILE = "citations.bib"  # in hub_cards/
MEDPROBE = "medprobe"  # the key of medprobe's own (software) entry


@cache
def read_bib(path: Path) -> dict[str, str]:
    """Key -> the entry's BibTeX text as written in the .bib file `path`, in file order."""
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


def entries() -> dict[str, str]:
    """Key -> BibTeX text: medprobe's `hub_cards/citations.bib`, then the BibTeX files the registry's entries
    name (`bibtex`), in registry order. A key two files define differently is an error naming both."""
    found = dict(read_bib(card_template(BIB_FILE)))
    where = dict.fromkeys(found, f"hub_cards/{BIB_FILE}")
    named = [*registry().tasks.values(), *registry().probers.values()]
    for ref in dict.fromkeys(entry.bibtex for entry in named if entry.bibtex):
        for key, text in read_bib(package_resource(ref, "BibTeX file")).items():
            if key in found and found[key] != text:
                raise UserError(f"the BibTeX key {key!r} is in {where[key]} and, written otherwise, in {ref}; rename one of them")
            found.setdefault(key, text)
            where.setdefault(key, ref)
    return found


def citation_keys(task: str | None = None, prober: str | None = None) -> list[str]:
    """The keys a run of `task` with `prober` must cite: the task's, the prober's, then medprobe's.

    Either may be None (e.g. a card cites its benchmark's task keys only); each key appears once.
    An unknown task or prober name raises KeyError, as `Registry.task` and `Registry.prober` do.
    """
    found = registry()
    return keys_of(*([found.task(task)] if task else []), *([found.prober(prober)] if prober else []))


def keys_of(*entries: TaskEntry | ProberEntry) -> list[str]:
    """The keys a run using these registry entries cites: theirs in the order given, then medprobe's, each once."""
    return list(dict.fromkeys([*(key for entry in entries for key in entry.citations), MEDPROBE]))


def benchmark_keys(benchmark: str) -> list[str]:
    """The keys a dataset card of `benchmark` cites: those of every task that reads it, then medprobe's."""
    keys = [key for entry in registry().tasks.values() if entry.benchmark == benchmark for key in entry.citations]
    return list(dict.fromkeys([*keys, MEDPROBE]))


def bibtex(keys: list[str] | tuple[str, ...]) -> str:
    """The BibTeX entries of `keys`, in that order, separated by blank lines."""
    known = entries()
    unknown = [key for key in keys if key not in known]
    if unknown:
        raise UserError(
            f"no BibTeX entry for {', '.join(unknown)} in hub_cards/{BIB_FILE} or a plugin's BibTeX file; known: {', '.join(known)}"
        )
    return "\n\n".join(known[key] for key in dict.fromkeys(keys))


def citable_names() -> list[str]:
    """What `medprobe cite` accepts: benchmark and task names, then prober names, as the registry has them."""
    names = [name for entry in registry().tasks.values() for name in (entry.benchmark, entry.name)]
    return list(dict.fromkeys([*names, *registry().probers]))


def keys_for_names(names: list[str]) -> list[str]:
    """The keys of benchmarks, tasks and probers named by a user, each once, then medprobe's."""
    known = citable_names()
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UserError(f"cannot cite {', '.join(map(repr, unknown))}: not a benchmark or prober; known: {', '.join(known)}")
    tasks, probers = registry().tasks, registry().probers
    keys: list[str] = []
    for name in names:
        if name in probers:
            keys += probers[name].citations
        if name in tasks:
            keys += tasks[name].citations
        if name not in probers and name not in tasks:  # a benchmark that no task is named after: its tasks' keys
            keys += benchmark_keys(name)
    return list(dict.fromkeys([*keys, MEDPROBE]))
