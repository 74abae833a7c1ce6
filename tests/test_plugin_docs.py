"""docs/plugins.md states the whole contract of a plugin's tasks and probers, and only what exists: every
medprobe name it writes in backticks resolves, every member of a class it names (`TaskEntry.bibtex`) is
one, and its tables list every field of the entries, of the Task contract and of Scored, every
conformance rule and every prober kind with its verbs: a field added to the code and not to the page, or
a name renamed in the code and not on the page, fails here."""

from __future__ import annotations

import dataclasses
import re
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

from medprobe.cli.plugin_kit.check import REGISTERS
from medprobe.cli.plugin_kit.conformance import PROBER_RULES, TASK_RULES
from medprobe.contracts import PROTOCOLS, Prober
from medprobe.export.lm_eval import ExportReport
from medprobe.registry import PLUGIN_GROUPS, Option, PluginSource, ProberEntry, ProfilePlan, Registry, TaskEntry
from medprobe.stats import Estimator, Outcomes, Sample
from medprobe.tasks import Scored, Task, contract_gaps
from medprobe.tasks.base import BenchmarkTask

PAGE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
TEXT = PAGE.read_text(encoding="utf-8")
PROSE = re.sub(r"```.*?```", "", TEXT, flags=re.S)  # code blocks are examples, checked by running them
SPANS = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", PROSE)]
CLASSES = {
    cls.__name__: cls
    for cls in (TaskEntry, ProberEntry, ProfilePlan, Option, Registry, PluginSource, Task, BenchmarkTask, Scored)
    + (Outcomes, Estimator, Sample, Prober, ExportReport)
}


def resolve(dotted: str) -> Any:
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ImportError(dotted)


def named(span: str) -> str:
    return re.sub(r"\(.*\)$", "", span)  # `Outcomes.build(ids, ...)` names Outcomes.build


def test_every_dotted_medprobe_name_exists():
    assert set(PLUGIN_GROUPS) <= set(SPANS), "the page names the entry-point groups"
    dotted = sorted({named(span) for span in SPANS if re.fullmatch(r"medprobe(\.\w+)+", named(span))} - set(PLUGIN_GROUPS))
    assert len(dotted) > 20, dotted  # the page names the API it documents
    missing = []
    for name in dotted:
        try:
            resolve(name)
        except (ImportError, AttributeError):
            missing.append(name)
    assert not missing, f"docs/plugins.md names what does not exist: {missing}"


def has_member(cls: type, name: str) -> bool:
    fields = {field.name for field in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    return name in fields or hasattr(cls, name) or name in getattr(cls, "__annotations__", {})


def test_every_member_of_a_class_the_page_names_exists():
    members = {named(span) for span in SPANS if re.fullmatch(r"\w+\.\w+", named(span)) and named(span).split(".")[0] in CLASSES}
    assert members, "the page names no class member"
    missing = sorted(member for member in members if not has_member(CLASSES[member.split(".")[0]], member.split(".")[1]))
    assert not missing, f"docs/plugins.md names members that do not exist: {missing}"


def table_after(marker: str) -> list[str]:
    """The first column's `names` of the table that follows `marker` on the page."""
    block = TEXT.split(marker, 1)[1].lstrip("\n")
    rows = []
    for line in block.splitlines():
        if not line.startswith("|"):
            break
        rows.append(line)
    return [re.match(r"\| `([^`]+)` \|", row)[1] for row in rows[2:]]


@pytest.mark.parametrize("cls", [TaskEntry, ProberEntry, ProfilePlan, Option, Scored], ids=lambda cls: cls.__name__)
def test_each_fields_table_lists_every_field_in_order(cls):
    marker = f"<!-- fields: {cls.__module__}.{cls.__name__} -->"
    assert marker in TEXT, f"docs/plugins.md has no table of {cls.__name__}'s fields"
    assert table_after(marker) == [field.name for field in dataclasses.fields(cls)]


def test_the_task_table_lists_the_whole_task_contract():
    assert table_after("<!-- members: medprobe.tasks.Task -->") == contract_gaps(object())  # an object lacks every member


def test_the_rules_table_lists_every_conformance_rule():
    assert table_after("<!-- rules: read by tests/test_plugin_docs.py -->") == [
        REGISTERS,
        *(rule.name for rule in TASK_RULES),
        *(rule.name for rule in PROBER_RULES),
    ]


def test_every_prober_kind_and_its_verbs_are_named():
    for kind, protocol in PROTOCOLS.items():
        verbs = [name for name in vars(protocol) if not name.startswith("_")]
        assert kind in SPANS and all(verb in SPANS for verb in verbs), (kind, verbs)


def test_every_card_placeholder_named_is_filled_by_the_build():
    from medprobe.resources import resource_root

    paragraph = TEXT.split("<!-- placeholders: read by tests/test_plugin_docs.py -->", 1)[1].split("\n\n", 1)[0]
    named_here = re.findall(r"`\$(\w+)`", paragraph)
    cards = (Path(resolve("medprobe.building.cards").__file__)).read_text(encoding="utf-8")
    shared = {path.stem for path in (resource_root() / "hub_cards" / "_shared").glob("*.md")}
    unknown = [name for name in named_here if f'"{name}":' not in cards and name not in shared]
    assert len(named_here) >= 8 and not unknown, unknown
