"""Reading the inputs: BioLAMA triples, manual prompts, extra pool entities and the corpus, each
checked with messages that name the file, the line and what was expected; and the entity pools.
"""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass
from pathlib import Path

from .segmentation import Entity, surface_key

SUBJECT_SLOT, OBJECT_SLOT, MASK = "[X]", "[Y]", "[MASK]"
# Objects of a triple without `obj_types` form one pool per relation (BioLAMA leaves types empty
# for some sources); this is the type name they get.
UNTYPED = "objects of {relation}"


class ContextVarianceInputError(ValueError):
    """An input file is missing or malformed; the message names the file, the line and what was expected."""


@dataclass
class Triple:
    triple_id: str
    relation: str
    subject: str
    subject_aliases: list[str]
    objects: list[str]
    object_types: list[str]
    object_aliases: list[list[str]]
    source: str  # file:line, for messages


def _read_jsonl(path: Path) -> list[tuple[int, dict]]:
    rows = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    raise ContextVarianceInputError(f"{path}, line {number}: not valid JSON ({err})") from err
                if not isinstance(row, dict):
                    raise ContextVarianceInputError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
                rows.append((number, row))
    except UnicodeDecodeError as err:
        raise ContextVarianceInputError(f"{path}: not valid UTF-8 ({err})") from err
    return rows


def _string_list(value, where: str, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ContextVarianceInputError(f"{where}: {name} must be a list of strings, got {value!r:.120}")
    return value


def read_triples(paths: list[Path]) -> list[Triple]:
    """BioLAMA rows: uuid, predicate_id, sub_label, sub_aliases, obj_labels, obj_types, obj_aliases."""
    triples = []
    for path in paths:
        for number, row in _read_jsonl(path):
            where = f"{path}, line {number}"
            for name in ("predicate_id", "sub_label", "obj_labels"):
                if not row.get(name):
                    raise ContextVarianceInputError(
                        f"{where}: missing or empty {name!r}; a BioLAMA triple needs predicate_id, sub_label and a non-empty obj_labels list"
                    )
            objects = _string_list(row["obj_labels"], where, "obj_labels")
            types = _string_list(row.get("obj_types"), where, "obj_types")
            aliases = row.get("obj_aliases") or [[] for _ in objects]
            if types and len(types) != len(objects):
                raise ContextVarianceInputError(
                    f"{where}: {len(objects)} obj_labels but {len(types)} obj_types; expected one type per object"
                )
            if len(aliases) != len(objects):
                raise ContextVarianceInputError(
                    f"{where}: {len(objects)} obj_labels but {len(aliases)} obj_aliases lists; expected one list per object"
                )
            relation = str(row["predicate_id"])
            triples.append(
                Triple(
                    triple_id=str(row.get("uuid") or f"{row.get('sub_uri', row['sub_label'])}-{relation}"),
                    relation=relation,
                    subject=row["sub_label"],
                    subject_aliases=_string_list(row.get("sub_aliases"), where, "sub_aliases"),
                    objects=objects,
                    object_types=types or [UNTYPED.format(relation=relation)] * len(objects),
                    object_aliases=[_string_list(a, where, "obj_aliases[i]") for a in aliases],
                    source=where,
                )
            )
    if not triples:
        raise ContextVarianceInputError(f"no triples in {', '.join(map(str, paths))}")
    return triples


def read_prompts(path: Path) -> dict[str, str]:
    """Manual prompts `{"relation", "template"}`; every template needs [X] and exactly one [Y]."""
    prompts = {}
    for number, row in _read_jsonl(path):
        relation, template = row.get("relation"), row.get("template")
        if not isinstance(relation, str) or not isinstance(template, str):
            raise ContextVarianceInputError(
                f'{path}, line {number}: expected {{"relation": ..., "template": ...}}, got {row!r:.120}'
            )
        if template.count(OBJECT_SLOT) != 1 or SUBJECT_SLOT not in template:
            raise ContextVarianceInputError(
                f"{path}, line {number}: the template of {relation!r} must contain {SUBJECT_SLOT} and exactly one {OBJECT_SLOT}, got {template!r}"
            )
        prompts[relation] = template
    return prompts


def read_entities(path: Path) -> list[Entity]:
    entities = []
    for number, row in _read_jsonl(path):
        where = f"{path}, line {number}"
        if not isinstance(row.get("label"), str) or not row["label"].strip() or not isinstance(row.get("type"), str):
            raise ContextVarianceInputError(
                f'{where}: expected {{"label": name, "type": type, "aliases": [...]}}, got {row!r:.120}'
            )
        entities.append(Entity(row["label"], row["type"], _string_list(row.get("aliases"), where, "aliases")))
    if not entities:
        raise ContextVarianceInputError(f"{path}: the entity file is empty; give one entity per line or leave the file out")
    return entities


def read_corpus(path: Path) -> dict[str, str]:
    """Documents by id: `*.txt` files (id = path relative to the corpus folder) and `*.jsonl` lines `{"id", "text"}`."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".txt", ".jsonl"))
    documents: dict[str, str] = {}
    for file in files:
        if file.suffix == ".txt":
            documents[str(file.relative_to(path)) if file != path else file.name] = file.read_text(encoding="utf-8")
            continue
        for number, row in _read_jsonl(file):
            if not isinstance(row.get("text"), str):
                raise ContextVarianceInputError(f'{file}, line {number}: expected {{"id": ..., "text": ...}}, got {row!r:.120}')
            doc_id = str(row.get("id", f"{file.stem}:{number}"))
            if doc_id in documents:
                raise ContextVarianceInputError(f"{file}, line {number}: document id {doc_id!r} occurs twice in the corpus")
            documents[doc_id] = row["text"]
    if not documents:
        raise ContextVarianceInputError(f"{path}: no documents (expected *.txt files or *.jsonl lines with id and text)")
    return documents


def build_pools(triples: list[Triple], extra: list[Entity]) -> dict[str, dict[str, Entity]]:
    """Entity pools by type: every object of every triple, plus the entities of the entity file."""
    pools: dict[str, dict[str, Entity]] = {}

    def add(label: str, kind: str, aliases: list[str]) -> None:
        entity = pools.setdefault(kind, {}).setdefault(surface_key(label), Entity(label, kind))
        entity.aliases.extend(a for a in aliases if a not in entity.aliases and a != entity.label)

    for triple in triples:
        for label, kind, aliases in zip(triple.objects, triple.object_types, triple.object_aliases):
            add(label, kind, aliases)
    for entity in extra:
        add(entity.label, entity.type, entity.aliases)
    return pools


def resolve_inputs(root: Path, pattern: str, what: str) -> list[Path]:
    """Paths for an input parameter (relative to data_dir unless absolute; globs allowed)."""
    full = pattern if Path(pattern).is_absolute() else str(root / pattern)
    paths = sorted(Path(p) for p in glob.glob(full, recursive=True))
    if not paths:
        raise FileNotFoundError(
            f"no {what} input at {full}; expected the layout triples.jsonl, prompts.jsonl, [entities.jsonl], corpus/ "
            f"in the data folder, or set the path with --set {what}=PATH"
        )
    return paths
