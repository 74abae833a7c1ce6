"""MedLAMA: biomedical factual-knowledge probing queries from 19 UMLS 2021AA relations.

Meng, Liu et al., "Rewire-then-Probe: A Contrastive Recipe for Probing Biomedical Knowledge of
Pre-trained Language Models", ACL 2022. Release: github.com/cambridgeltl/medlama.

Configs: `full` (19,000 queries, 1,000 per relation) and `hard` (15,329 queries whose answers
cannot be read off the head name). Split: `test`.

The source is the official release at a pinned commit, fetched through the download manager,
or a `data_dir` with the release layout (`prompts.csv`, `2021AA/{relation}_1000.csv`,
`2021AA/{relation}_{N}_hard.csv`). The `hard` rows are derived from the full rows by the
published rule and checked against the released hard files; any disagreement stops the build.
Each full file must hold exactly 1,000 distinct rows, as the release does, so a duplicated row
or a truncated file stops the build too; for a user's own regenerated data in the release
format, `medprobe build medlama --set rows_per_relation=N` (0: any number) relaxes the count,
and the card states the row check the build applied.

A second source regenerates the benchmark from the user's own UMLS release (`umls_dir`, the
META folder: `medprobe build medlama --umls-dir META`), the way the authors' notebook generated
the 2021AA release; see "the second source" below.

This module is self-contained (the datasets library and rouge-score only) and is loaded by
path: `medprobe build medlama` turns it into a Hub folder of Parquet files plus a card.
"""

from __future__ import annotations

import ast
import csv
import inspect
import os
import re
import shlex
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import datasets
import numpy as np
from datasets.utils import tqdm
from rouge_score import rouge_scorer, tokenizers

RELEASE_COMMIT = "8a314d11c3b8538a7ec522f668b7fbe0394caa9d"
RELEASE_URL = f"https://raw.githubusercontent.com/cambridgeltl/medlama/{RELEASE_COMMIT}/data/medlama"
RELEASE_TREE = f"https://github.com/cambridgeltl/medlama/tree/{RELEASE_COMMIT}/data/medlama"

# The 19 relations and the size of each released hard file (the N in {relation}_{N}_hard.csv).
HARD_SIZES = {
    "associated_morphology_of": 158,
    "disease_has_abnormal_cell": 778,
    "disease_has_associated_anatomic_site": 726,
    "disease_has_normal_cell_origin": 812,
    "disease_has_normal_tissue_origin": 842,
    "disease_mapped_to_gene": 984,
    "disease_may_have_associated_disease": 842,
    "disease_may_have_finding": 952,
    "disease_may_have_molecular_abnormality": 989,
    "gene_associated_with_disease": 997,
    "gene_encodes_gene_product": 821,
    "gene_product_encoded_by_gene": 649,
    "gene_product_has_associated_anatomy": 956,
    "gene_product_has_biochemical_function": 491,
    "gene_product_plays_role_in_biological_process": 888,
    "has_physiologic_effect": 983,
    "may_prevent": 861,
    "may_treat": 977,
    "occurs_after": 623,
}
RELATIONS = tuple(HARD_SIZES)
FULL_SIZE = 1000
RELEASE_COLUMNS = (
    "head_cui",
    "head_name",
    "rel",
    "tail_cuis_list",
    "tail_names_list",
    "tail_names",
    "tail_cuis",
    "tail_cuis_len",
    "tail_names_len",
    "avg_match",
    "avg_rouge_l",
)
PROMPT_COLUMNS = ("pid", "human_prompt")
HARD_THRESHOLD = 0.1
NAME_SEPARATOR = " || "

_DESCRIPTION = (
    "MedLAMA probes biomedical factual knowledge with cloze queries built from 19 UMLS 2021AA "
    "relations (SNOMED CT, NCI, MED-RT): `full` has 1,000 queries per relation, `hard` keeps the "
    "queries whose answers share little surface form with the head name."
)

FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "relation": datasets.Value("string"),
        "head_cui": datasets.Value("string"),
        "head_name": datasets.Value("string"),
        "answers": datasets.List(datasets.Value("string")),
        "answer_cuis": datasets.List(datasets.Value("string")),
        "template": datasets.Value("string"),
        "query": datasets.Value("string"),
        "avg_match": datasets.Value("float64"),
        "avg_rouge_l": datasets.Value("float64"),
    }
)

FIELD_DESCRIPTIONS = {
    "id": "`{relation}-{row}`: the row index in the full set (a hard row keeps its full id)",
    "relation": "one of the 19 UMLS relations",
    "head_cui": "UMLS CUI of the head entity [X]",
    "head_name": "name of the head entity [X]",
    "answers": "gold answer names, de-duplicated in source order",
    "answer_cuis": "UMLS CUI of each answer name (same order)",
    "template": "the human prompt with [X] and [Y]",
    "query": "the template with [X] filled; [Y] is left for the prober's own mask token",
    "avg_match": "share of gold names found in the head name (the hardness rule, see below)",
    "avg_rouge_l": "mean ROUGE-L F between head name and gold names (the hardness rule)",
}


class MedlamaFormatError(ValueError):
    """A release file does not have the expected layout; the message names file, row and column."""


# --- the published hardness rule -----------------------------------------------------------------


def release_reference_names(tail_names: str) -> list[str]:
    """The gold names as the MedLAMA authors compared them to the head name.

    Their notebook split the joined names on "||", not " || ", so each name keeps the spaces
    around the separator ("Bone " / " Bone "): a padded name cannot match at the very start or
    end of the head name. We mirror it because it decides which queries are "hard".
    """
    return tail_names.split(NAME_SEPARATOR.strip())


class _ReleaseRougeTokenizer(tokenizers.Tokenizer):
    """Lower-cased white-space words, each counted once.

    The authors scored with the `rouge` package, which lower-cases nothing itself (they did),
    splits sentences on "." and counts distinct words; this tokenizer gives rouge-score the
    same units.
    """

    def tokenize(self, text: str) -> list[str]:
        return list(dict.fromkeys(text.lower().replace(".", " ").split()))


_ROUGE = rouge_scorer.RougeScorer(["rougeL"], tokenizer=_ReleaseRougeTokenizer())


def avg_match(head_name: str, tail_names: str) -> float:
    """Share of gold names found inside the lower-cased head name."""
    names = release_reference_names(tail_names)
    return sum(name.lower() in head_name.lower() for name in names) / len(names)


def avg_rouge_l(head_name: str, tail_names: str) -> float:
    """Mean ROUGE-L F between the head name and each gold name."""
    names = release_reference_names(tail_names)
    total = 0.0
    for name in names:
        score = _ROUGE.score(name, head_name)["rougeL"]
        # The authors' F has 1e-8 in its denominator; it puts rows whose F is exactly 0.1 in hard.
        total += 2 * score.precision * score.recall / (score.precision + score.recall + 1e-8)
    return total / len(names)


def is_hard(match: float, rouge_l: float) -> bool:
    return match < HARD_THRESHOLD and rouge_l < HARD_THRESHOLD


# --- reading the release -------------------------------------------------------------------------


def _read_csv(path: str, required: tuple[str, ...]) -> list[dict[str, str]]:
    """The data rows of a release CSV as dicts; every row must have the header's number of fields.

    A row with fewer or more fields than the header is a truncated file or an unbalanced quote,
    not data: it stops the read, named by its row (data rows count from 1) and its file line.
    """
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle)
            try:
                return _checked_rows(path, reader, required)
            except csv.Error as err:
                raise MedlamaFormatError(_csv_error_message(path, reader.line_num, err)) from err
    except UnicodeDecodeError as err:
        raise MedlamaFormatError(f"{path}: not valid UTF-8 ({err}); the release files are UTF-8") from err


def _checked_rows(path: str, reader, required: tuple[str, ...]) -> list[dict[str, str]]:
    """Header and rows from a `csv.reader` (whose `line_num` the messages quote)."""
    header = next(reader, None)
    if header is None:
        raise MedlamaFormatError(f"{path} is empty; expected a header line with the release columns {', '.join(required)}")
    missing = [c for c in required if c not in header]
    if missing:
        raise MedlamaFormatError(
            f"{path}: missing column(s) {', '.join(missing)}; expected the release "
            f"columns {', '.join(required)} (found {', '.join(header)})"
        )
    rows = []
    for cells in reader:
        if not cells:  # a blank line holds no row (csv.DictReader skipped them too)
            continue
        if len(cells) != len(header):
            raise MedlamaFormatError(
                f"{path}, row {len(rows) + 1} (line {reader.line_num}): {len(cells)} field(s), expected "
                f"{len(header)} as in the header; the file is truncated or a quote is unbalanced"
            )
        rows.append(dict(zip(header, cells)))
    return rows


def _csv_error_message(path: str, line: int, err: csv.Error) -> str:
    if "field larger than field limit" in str(err):
        return (
            f"{path}, line {line}: a cell is longer than the csv module's limit of "
            f"{csv.field_size_limit():,} characters; no release cell is near that long, so the file "
            f"is corrupt or not a MedLAMA release file (often an unclosed quote swallowing later lines)"
        )
    return f"{path}, line {line}: not readable as CSV ({err})"


def _string_list(path: str, row_number: int, column: str, value: str) -> list[str]:
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError) as err:
        raise MedlamaFormatError(
            f"{path}, row {row_number}, column {column}: expected a Python list literal of "
            f"strings such as ['Fever', 'Cough'], got {value[:120]!r} ({err.__class__.__name__})"
        ) from err
    if not isinstance(parsed, list) or not parsed or not all(isinstance(x, str) for x in parsed):
        raise MedlamaFormatError(
            f"{path}, row {row_number}, column {column}: expected a non-empty list of strings, got {value[:120]!r}"
        )
    return parsed


def read_relation_rows(path: str, relation: str, rows_per_relation: int | None = FULL_SIZE) -> list[dict]:
    """Read one full release CSV and return checked rows with the answers de-duplicated in order.

    The file must hold `rows_per_relation` distinct rows (the release's 1,000; 0 or None: any
    number, for regenerated data). Row numbers in errors count data rows from 1 (the header is
    line 1 of the file).
    """
    rows = []
    for row_number, raw in enumerate(_read_csv(path, RELEASE_COLUMNS), start=1):
        if raw["rel"] != relation:
            raise MedlamaFormatError(f"{path}, row {row_number}, column rel: expected {relation!r}, got {raw['rel']!r}")
        names_list = _string_list(path, row_number, "tail_names_list", raw["tail_names_list"])
        cuis_list = _string_list(path, row_number, "tail_cuis_list", raw["tail_cuis_list"])
        if len(names_list) != len(cuis_list):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: tail_names_list has {len(names_list)} names but "
                f"tail_cuis_list has {len(cuis_list)} CUIs; expected one CUI per name"
            )
        answers = list(dict.fromkeys(raw["tail_names"].split(NAME_SEPARATOR)))
        answer_cuis = raw["tail_cuis"].split(NAME_SEPARATOR)
        if answers != list(dict.fromkeys(names_list)):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: tail_names {raw['tail_names'][:120]!r} is not the "
                f"de-duplicated tail_names_list {names_list[:5]!r}"
            )
        if len(answer_cuis) != len(answers):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: {len(answers)} answer names but {len(answer_cuis)} "
                f"CUIs in tail_cuis; expected one CUI per name"
            )
        rows.append({"raw": raw, "row_number": row_number, "answers": answers, "answer_cuis": answer_cuis})
    if not rows:
        raise MedlamaFormatError(f"{path} has a header but no data rows; expected {_expected_rows(rows_per_relation)}")
    check_distinct_rows(path, [row["raw"] for row in rows])
    if rows_per_relation and len(rows) != rows_per_relation:
        raise MedlamaFormatError(
            f"{path}: {len(rows):,} rows, expected {_expected_rows(rows_per_relation)}; the file is "
            f"truncated or has rows added. For regenerated data of another size, build with "
            f"--set rows_per_relation=N (0: any number)"
        )
    return rows


def _expected_rows(rows_per_relation: int | None) -> str:
    if not rows_per_relation:
        return "at least one row (rows_per_relation=0: any number)"
    if rows_per_relation == FULL_SIZE:
        return f"{FULL_SIZE:,} (the release's rows per relation)"
    return f"{rows_per_relation:,} (rows_per_relation; the release has {FULL_SIZE:,})"


def check_distinct_rows(path: str, raws: list[dict[str, str]]) -> None:
    """Stop if two rows of one relation file have the same release-column values.

    Whole rows, not head CUIs: 21 head CUIs of the release appear twice with different head
    names, and those rows are distinct queries.
    """
    first_row_of: dict[tuple[str, ...], int] = {}
    duplicates = []
    for row_number, raw in enumerate(raws, start=1):
        key = _row_key(raw)
        if key in first_row_of:
            duplicates.append(f"row {row_number} is a duplicate of row {first_row_of[key]} (head_name={raw['head_name']!r})")
        else:
            first_row_of[key] = row_number
    if duplicates:
        shown = "; ".join(duplicates[:5]) + ("; ..." if len(duplicates) > 5 else "")
        raise MedlamaFormatError(
            f"{path}: {len(duplicates)} duplicate row(s) (every row of a relation file must be distinct): {shown}"
        )


def read_prompts(path: str) -> dict[str, str]:
    prompts = {}
    for row_number, row in enumerate(_read_csv(path, PROMPT_COLUMNS), start=1):
        template = row["human_prompt"].strip()
        if row["pid"] in HARD_SIZES and ("[X]" not in template or "[Y]" not in template):
            raise MedlamaFormatError(
                f"{path}, row {row_number}: the human_prompt of {row['pid']!r} must contain [X] and [Y], got {template!r}"
            )
        prompts[row["pid"]] = template
    missing = [r for r in RELATIONS if r not in prompts]
    if missing:
        raise MedlamaFormatError(f"{path}: no prompt for relation(s) {', '.join(missing)}")
    return prompts


def _row_key(raw: dict[str, str]) -> tuple[str, ...]:
    return tuple(raw[c] for c in RELEASE_COLUMNS)


def check_hard_rows(relation: str, full_path: str, hard_path: str, full_rows: list[dict]) -> None:
    """Stop unless the rows the rule selects are exactly the rows of the released hard file."""
    hard_raws = _read_csv(hard_path, RELEASE_COLUMNS)
    check_distinct_rows(hard_path, hard_raws)  # else a repeated row would read as "absent from full"
    released = Counter(_row_key(r) for r in hard_raws)
    full_keys = Counter(_row_key(r["raw"]) for r in full_rows)
    absent = released - full_keys
    if absent:
        first = next(iter(absent))
        raise MedlamaFormatError(
            f"{hard_path}: {sum(absent.values())} row(s) are absent from {full_path} (every hard "
            f"row must be a row of the full file); first: head_cui={first[0]}, head_name={first[1]!r}"
        )
    derived = Counter(_row_key(r["raw"]) for r in full_rows if r["hard"])
    only_derived, only_released = derived - released, released - derived
    if only_derived or only_released:
        lines = []
        for label, keys in (
            ("selected by the rule, not in the hard file", only_derived),
            ("in the hard file, not selected by the rule", only_released),
        ):
            for row in full_rows:
                if _row_key(row["raw"]) in keys:
                    lines.append(
                        f"  {label}: {full_path} row {row['row_number']} head_name="
                        f"{row['raw']['head_name']!r} avg_match={row['avg_match']:.4f} "
                        f"avg_rouge_l={row['avg_rouge_l']:.4f}"
                    )
        raise MedlamaFormatError(
            f"the hard rule (avg_match < {HARD_THRESHOLD} and avg_rouge_l < {HARD_THRESHOLD}) "
            f"disagrees with {hard_path} on {len(lines)} row(s):\n" + "\n".join(lines[:50])
        )


# --- the builder -----------------------------------------------------------------------------------


@dataclass
class MedlamaConfig(datasets.BuilderConfig):
    """`full` or `hard`, with the build's parameters (`medprobe build medlama --set key=value`).

    rows_per_relation (release source): how many distinct rows each full release file must hold.
    The release has 1,000 and the default insists on it, so a duplicated row or a truncated file
    stops the build; a different N (0: any number) is for a user's own data in the release
    format, and the card says so.

    The other parameters apply to a build from the user's own UMLS release only (`umls_dir`;
    `medprobe build medlama --umls-dir META --set key=value`); see `umls_settings`.
    """

    rows_per_relation: int | None = FULL_SIZE

    umls_dir: str | None = None
    umls_version: str | None = None  # read from release.dat or MRDOC.RRF when not given
    relations: str | None = None  # comma-separated; default: the 19 relations
    per_relation: int = 1000
    seed: int = 2021  # the notebook's random_state
    sabs: str = "SNOMEDCT_US,NCI,MED-RT"
    names: str = "atom"  # or "preferred"
    max_answers: int = 10
    drop_suppressed: bool = False
    allow_fewer: bool = True


PARAMETERS = tuple(f.name for f in fields(MedlamaConfig) if f.name not in {f.name for f in fields(datasets.BuilderConfig)})


def row_check_note(rows_per_relation: int | None) -> str:
    """The row-count rule a build applied, in words for the card."""
    if rows_per_relation == FULL_SIZE:
        return (
            f"every full release file held exactly {FULL_SIZE:,} distinct rows, the release's size "
            f"(a duplicated row or a truncated file stops the build)."
        )
    if not rows_per_relation:
        count = "any number of distinct rows"
    else:
        count = f"exactly {rows_per_relation:,} distinct rows"
    return (
        f"relaxed with `rows_per_relation={rows_per_relation or 0}`: every full file held {count}, "
        f"not the release's {FULL_SIZE:,}, so this is not the official MedLAMA release but data "
        f"in its format."
    )


def _checked_rows_per_relation(value: object) -> int:
    # --set passes ints as ints; a bool is an int to Python but never a row count
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"medlama: rows_per_relation must be a whole number >= 0 (0: any number of rows), got {value!r}")
    return value


class Medlama(datasets.GeneratorBasedBuilder):
    """MedLAMA built from the official release files."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = MedlamaConfig
    BUILDER_CONFIGS = [
        MedlamaConfig(name="full", version=VERSION, description="All queries (19,000 in the release: 1,000 per relation)."),
        MedlamaConfig(
            name="hard", version=VERSION, description="The queries with avg_match and ROUGE-L below 0.1 (15,329 in the release)."
        ),
    ]
    DEFAULT_CONFIG_NAME = "full"

    def __init__(self, *args, **kwargs):
        # datasets' own message for a misspelt parameter prints the whole config; name it instead
        known = {f.name for f in fields(MedlamaConfig)} | set(inspect.signature(datasets.DatasetBuilder.__init__).parameters)
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(f"medlama: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(PARAMETERS)}")
        if "rows_per_relation" in kwargs:
            kwargs["rows_per_relation"] = _checked_rows_per_relation(kwargs["rows_per_relation"])
        super().__init__(*args, **kwargs)
        self.umls = umls_settings(self.config)  # None for the release source; fails before any work

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES,
            homepage="https://github.com/cambridgeltl/medlama",
            license="UMLS Metathesaurus License (UMLS-derived; see the dataset card)",
        )

    # --- the second source (the user's UMLS release); the functions are at the end of the module ---

    def _prompts_file(self, dl_manager: datasets.DownloadManager) -> str:
        """prompts.csv from `data_dir` (the release folder) or downloaded at the pinned commit.

        It is not shipped with medprobe: the release repository carries no licence for it.
        """
        if self.config.data_dir:
            path = Path(self.config.data_dir) / "prompts.csv"
            if not path.is_file():
                raise FileNotFoundError(
                    f"{path} is missing: with --umls-dir, --data-dir names the folder that holds the release's "
                    f"prompts.csv ({RELEASE_TREE}); leave --data-dir out to download it"
                )
            return str(path)
        try:
            return dl_manager.download(f"{RELEASE_URL}/prompts.csv")
        except Exception as err:  # offline, proxy, moved file: say what to do instead
            raise ConnectionError(
                f"could not download {RELEASE_URL}/prompts.csv ({err.__class__.__name__}: {err}). Download it "
                f"yourself and pass its folder as --data-dir (the UMLS files still come from --umls-dir)."
            ) from err

    def _generate_umls_examples(self, files: dict):
        settings, source = self.umls, files["umls"]
        prompts = read_prompts(files["prompts"])
        extraction = extract_queries(source, settings)
        sampled = sample_relations(extraction, settings)
        hard_counts: Counter = Counter()
        for relation in settings.relations:
            template = prompts[relation]
            for index, query in enumerate(sampled[relation]):
                tail_names = NAME_SEPARATOR.join(query.answers)
                match, rouge_l = avg_match(query.head_name, tail_names), avg_rouge_l(query.head_name, tail_names)
                hard = is_hard(match, rouge_l)
                hard_counts[relation] += hard
                if self.config.name == "hard" and not hard:
                    continue
                example_id = f"{relation}-{index:04d}"
                yield (
                    example_id,
                    {
                        "id": example_id,
                        "relation": relation,
                        "head_cui": query.head_cui,
                        "head_name": query.head_name,
                        "answers": list(query.answers),
                        "answer_cuis": list(query.answer_cuis),
                        "template": template,
                        "query": template.replace("[X]", query.head_name),
                        "avg_match": match,
                        "avg_rouge_l": rouge_l,
                    },
                )
        sampled_counts = {relation: len(rows) for relation, rows in sampled.items()}
        UMLS_BUILD_STATS[self.config.name] = UmlsBuildStats(
            settings, source, extraction, sampled_counts, dict(hard_counts), data_dir=self.config.data_dir
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        UMLS_BUILD_STATS.pop(self.config.name, None)  # the card must not describe an earlier build
        if self.umls is not None:
            files = {"umls": umls_source(self.umls), "prompts": self._prompts_file(dl_manager)}
            return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"files": files})]
        want_hard = self.config.name == "hard"
        if self.config.data_dir:
            files = local_release_files(self.config.data_dir, want_hard)
        else:
            files = self._download_release(dl_manager, want_hard)
        return [datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"files": files})]

    @staticmethod
    def _download_release(dl_manager: datasets.DownloadManager, want_hard: bool) -> dict:
        urls = {
            "prompts": f"{RELEASE_URL}/prompts.csv",
            "full": {r: f"{RELEASE_URL}/2021AA/{r}_{FULL_SIZE}.csv" for r in RELATIONS},
        }
        if want_hard:
            urls["hard"] = {r: f"{RELEASE_URL}/2021AA/{r}_{n}_hard.csv" for r, n in HARD_SIZES.items()}
        try:
            return dl_manager.download(urls)
        except Exception as err:  # offline, proxy, moved files: say what to do instead
            raise ConnectionError(
                f"could not download the MedLAMA release from {RELEASE_URL} ({err.__class__.__name__}: "
                f"{err}). Download {RELEASE_TREE} yourself and pass its folder as data_dir "
                f"(medprobe build medlama --data-dir DIR)."
            ) from err

    def _generate_examples(self, files: dict):
        if "umls" in files:  # the second source: the user's own UMLS release
            yield from self._generate_umls_examples(files)
            return
        prompts = read_prompts(files["prompts"])
        for relation in RELATIONS:
            rows = read_relation_rows(files["full"][relation], relation, self.config.rows_per_relation)
            for row in rows:
                raw = row["raw"]
                row["avg_match"] = avg_match(raw["head_name"], raw["tail_names"])
                row["avg_rouge_l"] = avg_rouge_l(raw["head_name"], raw["tail_names"])
                row["hard"] = is_hard(row["avg_match"], row["avg_rouge_l"])
            if self.config.name == "hard":
                check_hard_rows(relation, files["full"][relation], files["hard"][relation], rows)
            template = prompts[relation]
            for index, row in enumerate(rows):
                if self.config.name == "hard" and not row["hard"]:
                    continue
                raw = row["raw"]
                example_id = f"{relation}-{index:04d}"
                yield (
                    example_id,
                    {
                        "id": example_id,
                        "relation": relation,
                        "head_cui": raw["head_cui"],
                        "head_name": raw["head_name"],
                        "answers": row["answers"],
                        "answer_cuis": row["answer_cuis"],
                        "template": template,
                        "query": template.replace("[X]", raw["head_name"]),
                        "avg_match": row["avg_match"],
                        "avg_rouge_l": row["avg_rouge_l"],
                    },
                )


def local_release_files(data_dir: str, want_hard: bool) -> dict:
    """Map the release files in `data_dir`; name every missing file at once."""
    root = Path(data_dir)
    if not root.exists():
        raise FileNotFoundError(f"{root} does not exist; expected a folder with the MedLAMA release layout of {RELEASE_TREE}")
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a folder; expected a folder with the MedLAMA release layout of {RELEASE_TREE}")
    files: dict = {"prompts": str(root / "prompts.csv"), "full": {}, "hard": {}}
    missing = [] if (root / "prompts.csv").is_file() else ["prompts.csv"]
    ambiguous = []
    for relation in RELATIONS:
        full = root / "2021AA" / f"{relation}_{FULL_SIZE}.csv"
        if full.is_file():
            files["full"][relation] = str(full)
        else:
            missing.append(f"2021AA/{full.name}")
        if want_hard:
            hard = sorted((root / "2021AA").glob(f"{relation}_*_hard.csv"))
            if len(hard) == 1:
                files["hard"][relation] = str(hard[0])
            elif hard:
                ambiguous.append(f"{relation}: {' and '.join(str(path) for path in hard)}")
            else:
                missing.append(f"2021AA/{relation}_{HARD_SIZES[relation]}_hard.csv")
    if missing:
        raise FileNotFoundError(
            f"{root} is missing {len(missing)} MedLAMA release file(s): {', '.join(missing)}. "
            f"Expected the release layout of {RELEASE_TREE}: prompts.csv, "
            f"2021AA/{{relation}}_1000.csv and 2021AA/{{relation}}_{{N}}_hard.csv for the "
            f"{len(RELATIONS)} relations."
        )
    if ambiguous:
        raise MedlamaFormatError(
            "more than one hard file for a relation, keep exactly one {relation}_{N}_hard.csv each: " + "; ".join(ambiguous)
        )
    return files


# --- card text -------------------------------------------------------------------------------------


def card_context(built: dict[str, datasets.DatasetDict], params: dict | None = None) -> dict[str, str]:
    """Benchmark-specific parts of the dataset card (hub_cards/medlama.md); `params` are the build's `--set` values."""
    counts = {name: Counter(ds["test"]["relation"]) for name, ds in built.items()}
    prompts = {}
    for ds in built.values():
        for relation, template in zip(ds["test"]["relation"], ds["test"]["template"]):
            prompts.setdefault(relation, template)
    header = "| relation | prompt | " + " | ".join(f"{c} queries" for c in counts) + " |"
    lines = [header, "|" + "---|" * (2 + len(counts))]
    for relation in RELATIONS:
        sizes = " | ".join(f"{counts[c].get(relation, 0):,}" for c in counts)
        lines.append(f"| `{relation}` | {prompts.get(relation, '')} | {sizes} |")
    answer_space = []
    for name, ds in built.items():
        names = set(ds["test"]["head_name"])
        for answers in ds["test"]["answers"]:
            names.update(answers)
        answer_space.append(f"`{name}`: {len(names):,} names")
    return {
        "relations_table": "\n".join(lines),
        "answer_space_sizes": "; ".join(answer_space),
        "release_commit": RELEASE_COMMIT,
        "release_tree": RELEASE_TREE,
        **source_context(built, params or {}),
    }


# --- the second source: regenerate MedLAMA from the user's own UMLS release ----------------------------
#
# The authors generated the release once, from UMLS 2021AA, with the notebook NOTEBOOK_URL. What it
# does, and what this source does (the card states each step, with the counts of this build):
# - keeps the MRREL rows whose RELA is one of the 19 relations (final_19_relation.txt) and whose SAB is
#   SNOMEDCT_US, NCI or MED-RT; no filter on SUPPRESS, no semantic-type filter (MRSTY is not read);
# - reads a row CUI1|AUI1|..|CUI2|AUI2|..|RELA as "CUI2 RELA CUI1": the head is CUI2, the answer CUI1;
# - names each side by the string of the atom the row names (AUI2 / AUI1), else by a string of the CUI;
# - groups rows into one query per (head CUI, head name, relation), answers de-duplicated by name in
#   MRREL order, each with the CUI of the last row that gives that name;
# - keeps queries with at most 10 answer names; per relation, draws 1,000 with pandas'
#   DataFrame.sample(1000, random_state=2021) from the queries sorted by (head CUI, head name);
# - the hard subset is the drawn rows with avg_match < 0.1 and avg_rouge_l < 0.1.
# Where we differ, and why: the fallback name is the CUI's English preferred name (the notebook took
# whichever string of the CUI came last in MRCONSO, in any language), and an atom that is not English is
# not used as a name (never the case for the three default sources, which are English).

logger = datasets.logging.get_logger(__name__)

NOTEBOOK_URL = f"https://github.com/cambridgeltl/medlama/blob/{RELEASE_COMMIT}/notebooks/data_prep/generate_biomed_lama.ipynb"
UMLS_PARAMETERS = (
    "umls_dir",
    "umls_version",
    "relations",
    "per_relation",
    "seed",
    "sabs",
    "names",
    "max_answers",
    "drop_suppressed",
    "allow_fewer",
)
NOTEBOOK_SABS = ("SNOMEDCT_US", "NCI", "MED-RT")
NAME_SOURCES = ("atom", "preferred")
MRREL_COLUMNS = (
    "CUI1",
    "AUI1",
    "STYPE1",
    "REL",
    "CUI2",
    "AUI2",
    "STYPE2",
    "RELA",
    "RUI",
    "SRUI",
    "SAB",
    "SL",
    "RG",
    "DIR",
    "SUPPRESS",
    "CVF",
)
MRCONSO_COLUMNS = (
    "CUI",
    "LAT",
    "TS",
    "LUI",
    "STT",
    "SUI",
    "ISPREF",
    "AUI",
    "SAUI",
    "SCUI",
    "SDUI",
    "SAB",
    "TTY",
    "CODE",
    "STR",
    "SRL",
    "SUPPRESS",
    "CVF",
)
_REL = {name: i for i, name in enumerate(MRREL_COLUMNS)}
_CONSO = {name: i for i, name in enumerate(MRCONSO_COLUMNS)}
_VERSION_PATTERN = re.compile(r"[0-9A-Za-z._-]+")
_CHUNK_BYTES = 1 << 24  # lines are read about 16 MB at a time: a list iterates faster than a file


class UmlsInputError(MedlamaFormatError):
    """A UMLS file is not in the RRF layout; the message names the file and line."""


@dataclass(frozen=True)
class UmlsSettings:
    """The checked parameters of a build from a UMLS release."""

    umls_dir: str
    umls_version: str | None
    relations: tuple[str, ...]
    per_relation: int
    seed: int
    sabs: tuple[str, ...]
    names: str
    max_answers: int
    drop_suppressed: bool
    allow_fewer: bool


def _whole_number(name: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValueError(f"medlama: {name} must be a whole number {bound}, got {value!r}")
    return value


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"medlama: {name} must be true or false, got {value!r}")
    return value


def _name_list(name: str, value: object) -> tuple[str, ...]:
    """A comma-separated string (from --set) or a list of strings (from Python)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"medlama: {name} must be a comma-separated list, got {value!r}")
    items = [item.strip() for item in items]
    if not all(items):
        raise ValueError(f"medlama: {name} has an empty entry: {value!r}")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise ValueError(f"medlama: {name} lists {', '.join(repeated)} more than once")
    return tuple(items)


def umls_settings(config: MedlamaConfig) -> UmlsSettings | None:
    """The checked UMLS parameters, or None for a build from the release files (no `umls_dir`)."""
    defaults = MedlamaConfig()
    changed = [p for p in UMLS_PARAMETERS[1:] if getattr(config, p) != getattr(defaults, p)]
    if not config.umls_dir:
        if changed:
            raise ValueError(
                f"medlama: {', '.join(changed)} only appl{'ies' if len(changed) == 1 else 'y'} to a build from "
                "your own UMLS release: add --umls-dir META (the META folder of the release)"
            )
        return None
    if not isinstance(config.umls_dir, (str, os.PathLike)):
        raise ValueError(f"medlama: umls_dir must be a folder path, got {config.umls_dir!r}")
    relations = _name_list("relations", config.relations) if config.relations is not None else RELATIONS
    unknown = [r for r in relations if r not in HARD_SIZES]
    if unknown:
        raise ValueError(f"medlama: unknown relation(s) {', '.join(unknown)}; MedLAMA's relations: {', '.join(RELATIONS)}")
    sabs = _name_list("sabs", config.sabs)
    if any(not re.fullmatch(r"[A-Za-z0-9_.-]+", sab) for sab in sabs):
        raise ValueError(f"medlama: sabs must be UMLS source abbreviations (SAB) such as SNOMEDCT_US, got {config.sabs!r}")
    if config.names not in NAME_SOURCES:
        raise ValueError(f"medlama: names must be one of {', '.join(NAME_SOURCES)}, got {config.names!r}")
    version = config.umls_version
    if version is not None and not (isinstance(version, str) and _VERSION_PATTERN.fullmatch(version)):
        raise ValueError(f"medlama: umls_version must be a release name such as 2025AA, got {version!r}")
    return UmlsSettings(
        umls_dir=os.fspath(config.umls_dir),
        umls_version=version,
        relations=tuple(r for r in RELATIONS if r in relations),  # the release's order, whatever the order given
        per_relation=_whole_number("per_relation", config.per_relation, 1),
        seed=_whole_number("seed", config.seed, 0, 2**32 - 1),  # numpy's RandomState takes 32-bit seeds
        sabs=sabs,
        names=config.names,
        max_answers=_whole_number("max_answers", config.max_answers, 1),
        drop_suppressed=_flag("drop_suppressed", config.drop_suppressed),
        allow_fewer=_flag("allow_fewer", config.allow_fewer),
    )


# --- the META folder and the release name ---


@dataclass(frozen=True)
class UmlsSource:
    meta: str
    mrrel: str
    mrconso: str
    version: str
    version_from: str  # where the version was read


def meta_folder(umls_dir: str) -> Path:
    """The META folder: `umls_dir` itself, or its META subfolder when given the release folder."""
    root = Path(umls_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"--umls-dir {umls_dir}: no such folder; expected the META folder of a UMLS release")
    if not any((root / name).exists() for name in ("MRREL.RRF", "MRCONSO.RRF")) and (root / "META").is_dir():
        root = root / "META"
    missing = [name for name in ("MRCONSO.RRF", "MRREL.RRF") if not (root / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{root} is missing {', '.join(missing)}; expected the META folder of a UMLS Metathesaurus release "
            "(full or a MetamorphoSys subset in RRF format, uncompressed) with MRCONSO.RRF and MRREL.RRF"
        )
    return root


def _release_dat_version(path: Path) -> str | None:
    """`umls.release.name` from a release.dat (a Java properties file the release and MetamorphoSys write)."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "umls.release.name":
            return value.strip() or None
    return None


def _mrdoc_version(path: Path) -> str | None:
    """The release name from MRDOC.RRF's row RELEASE|umls.release.name|release_info|<name>|."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = line.rstrip("\r\n").split("|")
            if fields[:3] == ["RELEASE", "umls.release.name", "release_info"] and len(fields) > 3:
                return fields[3].strip() or None
    return None


def umls_version(meta: Path, given: str | None) -> tuple[str, str]:
    """The release name and where it came from; the files and `umls_version` must agree."""
    found = []
    for path in (meta / "release.dat", meta.parent / "release.dat"):
        if path.is_file() and (name := _release_dat_version(path)):
            found.append((name, str(path)))
    if (meta / "MRDOC.RRF").is_file() and (name := _mrdoc_version(meta / "MRDOC.RRF")):
        found.append((name, str(meta / "MRDOC.RRF")))
    names = {name for name, _ in found}
    if len(names) > 1:
        raise UmlsInputError("the release files disagree on the UMLS version: " + "; ".join(f"{w}: {n}" for n, w in found))
    if given is not None:
        if names and given not in names:
            raise ValueError(f"medlama: umls_version={given} but {found[0][1]} says {found[0][0]}; leave umls_version out")
        return given, "the umls_version parameter" + (f" (and {found[0][1]})" if found else "")
    if not found:
        raise ValueError(
            f"medlama: cannot tell the UMLS version: no release.dat in {meta} or {meta.parent} and no "
            f"RELEASE|umls.release.name row in {meta / 'MRDOC.RRF'}; pass it: --set umls_version=2025AA"
        )
    return found[0][0], Path(found[0][1]).name


def umls_source(settings: UmlsSettings) -> UmlsSource:
    meta = meta_folder(settings.umls_dir)
    version, version_from = umls_version(meta, settings.umls_version)
    return UmlsSource(str(meta), str(meta / "MRREL.RRF"), str(meta / "MRCONSO.RRF"), version, version_from)


# --- streaming MRREL and MRCONSO ---


@dataclass
class FileScan:
    """What one pass over a file cost: lines, bytes, seconds."""

    lines: int = 0
    bytes: int = 0
    seconds: float = 0.0


@dataclass
class MrrelScan:
    """The MRREL rows of the selected relations and sources, and the counts at each filter."""

    edges: dict[str, list[tuple[str, str, str, str]]]  # relation -> (head CUI, head AUI, tail CUI, tail AUI), MRREL order
    rela_rows: Counter  # relation -> rows with that RELA, any SAB
    sab_rows: Counter  # relation -> ... and a selected SAB
    suppressed_rows: Counter  # relation -> ... of which SUPPRESS != N
    rows_by_sab: Counter  # (relation, SAB) -> rows, selected or not
    scan: FileScan


def _line_chunks(handle, bar) -> Iterator[tuple[int, list[bytes]]]:
    """(number of the first line, lines) about 16 MB at a time; the progress bar moves once a chunk."""
    first = 1
    while lines := handle.readlines(_CHUNK_BYTES):
        yield first, lines
        first += len(lines)
        bar.update(sum(map(len, lines)))


def _ends_well(raw: bytes) -> bool:
    """A line's last field ends with "|" too; a Windows line end, or no end on the last line, is fine."""
    return raw.endswith((b"|\n", b"|\r\n", b"|"))


def _decode(path: str, line_number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UmlsInputError(f"{path}, line {line_number}: not valid UTF-8 ({err}); the RRF files are UTF-8") from err


def _field_count_error(path: str, line_number: int, raw: bytes, columns: tuple[str, ...]) -> UmlsInputError:
    found = raw.count(b"|")
    return UmlsInputError(
        f"{path}, line {line_number}: expected {len(columns)} fields, each ended by '|' "
        f"({'|'.join(columns[:3])}|...|{columns[-1]}|), found {found} '|': {raw[:160].decode('utf-8', 'replace')!r}"
    )


def read_mrrel(path: str, settings: UmlsSettings, progress: bool = True) -> MrrelScan:
    """One streamed pass over MRREL.RRF (several GB): the rows of the selected relations.

    Works on bytes and decodes only the kept rows (about 1 % of the lines); every line's field
    count is checked. The direction follows the notebook: a row reads "CUI2 RELA CUI1".
    """
    wanted = {relation.encode(): relation for relation in settings.relations}
    sabs = {sab.encode() for sab in settings.sabs}
    parts = len(MRREL_COLUMNS) + 1  # each field ends with "|", so a line splits into one more part
    i_rela, i_sab, i_suppress = _REL["RELA"], _REL["SAB"], _REL["SUPPRESS"]
    i_cui1, i_aui1, i_cui2, i_aui2 = _REL["CUI1"], _REL["AUI1"], _REL["CUI2"], _REL["AUI2"]
    edges: dict[str, list[tuple[str, str, str, str]]] = {relation: [] for relation in settings.relations}
    rela_rows, sab_rows, suppressed_rows, rows_by_sab = Counter(), Counter(), Counter(), Counter()
    strings: dict[str, str] = {}  # one object per CUI/AUI string: the kept rows repeat them
    start, size = time.perf_counter(), os.path.getsize(path)
    lines = 0
    with (
        open(path, "rb") as handle,
        tqdm(total=size, unit="B", unit_scale=True, desc="reading MRREL.RRF", disable=not progress) as bar,
    ):
        for first, chunk in _line_chunks(handle, bar):
            lines += len(chunk)
            for offset, raw in enumerate(chunk):
                fields = raw.split(b"|")
                # the common line ends in "|\n"; anything else takes the slower, exact check
                if (len(fields) != parts or fields[-1] != b"\n") and not (len(fields) == parts and _ends_well(raw)):
                    raise _field_count_error(path, first + offset, raw, MRREL_COLUMNS)
                relation = wanted.get(fields[i_rela])
                if relation is None:
                    continue
                line_number = first + offset
                rela_rows[relation] += 1
                sab = fields[i_sab]
                rows_by_sab[relation, _decode(path, line_number, sab)] += 1
                if sab not in sabs:
                    continue
                sab_rows[relation] += 1
                if fields[i_suppress] != b"N":
                    suppressed_rows[relation] += 1
                    if settings.drop_suppressed:
                        continue
                cui1, aui1, cui2, aui2 = (_decode(path, line_number, fields[i]) for i in (i_cui1, i_aui1, i_cui2, i_aui2))
                if not cui1 or not cui2:
                    raise UmlsInputError(f"{path}, line {line_number}: CUI1 and CUI2 must not be empty: {raw[:160]!r}")
                edges[relation].append(tuple(strings.setdefault(text, text) for text in (cui2, aui2, cui1, aui1)))
    scan = FileScan(lines, size, time.perf_counter() - start)
    return MrrelScan(edges, rela_rows, sab_rows, suppressed_rows, rows_by_sab, scan)


@dataclass
class ConceptNames:
    """From MRCONSO, for the CUIs and atoms of the kept MRREL rows only."""

    atoms: dict[str, tuple[str, str, str]]  # AUI -> (STR, LAT, SUPPRESS)
    preferred: dict[str, str]  # CUI -> its English preferred name
    scan: FileScan


def english_name_rank(ts: str, stt: str, ispref: str, suppress: str) -> tuple[bool, ...]:
    """Higher is better: UMLS defines a concept's preferred name as its LAT=ENG, TS=P, STT=PF,
    ISPREF=Y atom; a name that is not suppressed goes first, so that a subset whose preferred atom
    is suppressed, or absent, still gets its best English name."""
    return (suppress == "N", ts == "P", stt == "PF", ispref == "Y")


def read_concept_names(path: str, cuis: set[str], auis: set[str], drop_suppressed: bool, progress: bool = True) -> ConceptNames:
    """One streamed pass over MRCONSO.RRF: atom strings and English preferred names of `cuis`.

    Compares the CUI prefix of each raw line and decodes only the lines of wanted CUIs; every
    line's field count is checked. Ties in rank go to the first line, so the result depends on the
    file only.
    """
    wanted = {cui.encode() for cui in cuis}
    separators = len(MRCONSO_COLUMNS)
    c = _CONSO
    atoms: dict[str, tuple[str, str, str]] = {}
    preferred: dict[str, str] = {}
    ranks: dict[str, tuple[bool, ...]] = {}
    start, size = time.perf_counter(), os.path.getsize(path)
    lines = 0
    with (
        open(path, "rb") as handle,
        tqdm(total=size, unit="B", unit_scale=True, desc="reading MRCONSO.RRF", disable=not progress) as bar,
    ):
        for first, chunk in _line_chunks(handle, bar):
            lines += len(chunk)
            for offset, raw in enumerate(chunk):
                if raw.count(b"|") != separators or not (raw.endswith(b"|\n") or _ends_well(raw)):
                    raise _field_count_error(path, first + offset, raw, MRCONSO_COLUMNS)
                if raw[: raw.find(b"|")] not in wanted:
                    continue
                f = _decode(path, first + offset, raw).rstrip("\r\n").split("|")
                if f[c["AUI"]] in auis:
                    atoms[f[c["AUI"]]] = (f[c["STR"]], f[c["LAT"]], f[c["SUPPRESS"]])
                if f[c["LAT"]] != "ENG" or (drop_suppressed and f[c["SUPPRESS"]] != "N"):
                    continue
                rank = english_name_rank(f[c["TS"]], f[c["STT"]], f[c["ISPREF"]], f[c["SUPPRESS"]])
                cui = f[c["CUI"]]
                if cui not in ranks or rank > ranks[cui]:
                    ranks[cui], preferred[cui] = rank, f[c["STR"]]
    scan = FileScan(lines, size, time.perf_counter() - start)
    return ConceptNames(atoms, preferred, scan)


# --- from rows to queries, and the sample ---


@dataclass(frozen=True)
class UmlsQuery:
    head_cui: str
    head_name: str
    answers: tuple[str, ...]
    answer_cuis: tuple[str, ...]


# Filter steps, in order; each counts per relation what is left after it (the card shows them all).
STEP_RELA, STEP_SAB, STEP_SUPPRESS, STEP_NAMED, STEP_QUERIES, STEP_MAX_ANSWERS = (
    "rela",
    "sab",
    "not_suppressed",
    "named",
    "queries",
    "max_answers",
)


@dataclass
class UmlsExtraction:
    """The sampling frame of each relation and the counts at every filter."""

    queries: dict[str, list[UmlsQuery]]  # relation -> queries sorted by (head CUI, head name)
    counts: dict[str, dict[str, int]]  # relation -> step -> what is left
    suppressed_kept: dict[str, int]  # relation -> suppressed MRREL rows kept (drop_suppressed=false)
    rows_by_sab: dict[tuple[str, str], int]  # (relation, SAB) -> MRREL rows with that RELA
    name_sources: Counter  # how each side of each kept row got its name
    mrrel: FileScan
    mrconso: FileScan


def query_answers(tails: list[tuple[str, str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Answer names de-duplicated in MRREL order, each with the CUI of the last row giving that name.

    `tails` are (CUI, name) pairs in MRREL order. The notebook kept one CUI per name this way
    (its name-to-CUI dict), so a name that two answer concepts share is one answer.
    """
    cui_of_name: dict[str, str] = {}
    for cui, name in tails:
        cui_of_name[name] = cui
    names = tuple(dict.fromkeys(name for _, name in tails))
    return names, tuple(cui_of_name[name] for name in names)


# How a side of a row got its name (keys of UmlsExtraction.name_sources), as the card says it.
NAME_HOW = {
    "atom": "by the row's atom",
    "concept": "by the concept's preferred name",
    "no_atom": "by the concept's preferred name, the row naming no atom",
    "atom_absent": "by the concept's preferred name, the row's atom not being in MRCONSO",
    "atom_not_english": "by the concept's preferred name, the row's atom not being English",
    "atom_suppressed": "by the concept's preferred name, the row's atom being suppressed",
    "unnamed": "not at all: the concept has no English name (the row is dropped)",
}


def endpoint_name(cui: str, aui: str, names: ConceptNames, settings: UmlsSettings) -> tuple[str | None, str]:
    """The name of one side of a row, and how it was chosen (a NAME_HOW key, for the card's counts)."""
    how = "concept"
    if settings.names == "atom":
        atom = names.atoms.get(aui) if aui else None
        if atom is not None and atom[1] == "ENG" and not (settings.drop_suppressed and atom[2] != "N"):
            return atom[0], "atom"
        if not aui:
            how = "no_atom"
        elif atom is None:
            how = "atom_absent"
        else:
            how = "atom_not_english" if atom[1] != "ENG" else "atom_suppressed"
    name = names.preferred.get(cui)
    return (name, how) if name is not None else (None, "unnamed")


def relation_queries(
    edges: list[tuple[str, str, str, str]], names: ConceptNames, settings: UmlsSettings, name_sources: Counter
) -> tuple[list[UmlsQuery], int, int]:
    """The queries of one relation, sorted by (head CUI, head name) as the notebook's groupby sorted
    them (the sample draws positions in this order), with the named-row and query counts."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    named = 0
    for head_cui, head_aui, tail_cui, tail_aui in edges:
        head_name, head_how = endpoint_name(head_cui, head_aui, names, settings)
        tail_name, tail_how = endpoint_name(tail_cui, tail_aui, names, settings)
        name_sources[head_how] += 1
        name_sources[tail_how] += 1
        if head_name is None or tail_name is None:
            continue
        named += 1
        groups.setdefault((head_cui, head_name), []).append((tail_cui, tail_name))
    queries = []
    for (head_cui, head_name), tails in sorted(groups.items()):
        answers, answer_cuis = query_answers(tails)
        if len(answers) <= settings.max_answers:
            queries.append(UmlsQuery(head_cui, head_name, answers, answer_cuis))
    return queries, named, len(groups)


def check_relations_present(scan: MrrelScan, settings: UmlsSettings, mrrel: str) -> None:
    """Stop on a relation with no row in the selected sources, and on a chosen SAB that gives no row."""
    absent = [relation for relation in settings.relations if scan.sab_rows[relation] == 0]
    if absent:
        details = []
        for relation in absent:
            others = sorted(sab for (r, sab), n in scan.rows_by_sab.items() if r == relation and n)
            where = f"{scan.rela_rows[relation]:,} rows with SAB {', '.join(others)}" if others else "no row at all"
            details.append(f"{relation} ({where})")
        rest = [r for r in settings.relations if r not in absent]
        raise UmlsInputError(
            f"{mrrel}: relation(s) absent from this release with SAB in {', '.join(settings.sabs)}: "
            f"{'; '.join(details)}. Build without them (--set relations={','.join(rest) or '...'}) or widen sabs."
        )
    if settings.sabs != NOTEBOOK_SABS:  # a chosen list: a SAB that gives nothing is most likely misspelt
        used = {sab for (_, sab), n in scan.rows_by_sab.items() if n}
        idle = [sab for sab in settings.sabs if sab not in used]
        if idle:
            raise UmlsInputError(
                f"{mrrel}: sabs {', '.join(idle)} give no row of the selected relations; SABs that do: "
                f"{', '.join(sorted(used)) or 'none'}"
            )


def _file_identity(path: str) -> tuple[str, int, int]:
    stat = os.stat(path)
    return (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)


# full and hard are built by two builders in one `medprobe build`; the second reuses the first's
# passes over the files, so MRREL and MRCONSO are each read once per build. One entry at most.
_EXTRACTIONS: dict[tuple, UmlsExtraction] = {}


def extract_queries(source: UmlsSource, settings: UmlsSettings, progress: bool = True) -> UmlsExtraction:
    """One pass over MRREL, one over MRCONSO (for the CUIs and atoms of the kept rows only), and the
    sampling frame of each relation."""
    key = (
        _file_identity(source.mrrel),
        _file_identity(source.mrconso),
        settings.relations,
        settings.sabs,
        settings.names,
        settings.max_answers,
        settings.drop_suppressed,
    )
    if key in _EXTRACTIONS:
        return _EXTRACTIONS[key]
    scan = read_mrrel(source.mrrel, settings, progress)
    check_relations_present(scan, settings, source.mrrel)
    cuis = {cui for edges in scan.edges.values() for edge in edges for cui in (edge[0], edge[2])}
    auis = {aui for edges in scan.edges.values() for edge in edges for aui in (edge[1], edge[3]) if aui}
    names = read_concept_names(source.mrconso, cuis, auis, settings.drop_suppressed, progress)
    queries, counts, name_sources = {}, {}, Counter()
    for relation in settings.relations:
        queries[relation], named, grouped = relation_queries(scan.edges[relation], names, settings, name_sources)
        kept = len(scan.edges[relation])
        counts[relation] = {
            STEP_RELA: scan.rela_rows[relation],
            STEP_SAB: scan.sab_rows[relation],
            STEP_SUPPRESS: kept,
            STEP_NAMED: named,
            STEP_QUERIES: grouped,
            STEP_MAX_ANSWERS: len(queries[relation]),
        }
    suppressed_kept = {r: 0 if settings.drop_suppressed else scan.suppressed_rows[r] for r in settings.relations}
    extraction = UmlsExtraction(queries, counts, suppressed_kept, dict(scan.rows_by_sab), name_sources, scan.scan, names.scan)
    _EXTRACTIONS.clear()
    _EXTRACTIONS[key] = extraction
    return extraction


def sample_indices(available: int, wanted: int, seed: int) -> list[int]:
    """The positions pandas' `DataFrame.sample(wanted, random_state=seed)` draws from `available`
    rows: a fresh numpy RandomState(seed), `choice` without replacement (a permutation's head), in
    drawn order. Checked against the order of the 2021AA release rows (tests)."""
    return np.random.RandomState(seed).choice(available, size=min(wanted, available), replace=False).tolist()


def sample_relations(extraction: UmlsExtraction, settings: UmlsSettings) -> dict[str, list[UmlsQuery]]:
    """`per_relation` queries of each relation, drawn as the notebook drew them (a fresh generator
    per relation). A relation with fewer queries is built whole, with a warning, unless
    allow_fewer=false: a newer release may hold fewer heads for a relation, and the card records it."""
    sampled = {}
    for relation in settings.relations:
        frame = extraction.queries[relation]
        counts = extraction.counts[relation]
        if not frame:
            raise UmlsInputError(
                f"{relation}: no query is left after the filters ({counts[STEP_SAB]:,} MRREL rows in the selected "
                f"sources, {counts[STEP_NAMED]:,} with English names, {counts[STEP_QUERIES]:,} queries, none with at "
                f"most {settings.max_answers} answers); build without it: --set relations=..."
            )
        if len(frame) < settings.per_relation:
            message = (
                f"{relation}: {len(frame):,} queries are left after the filters ({counts[STEP_SAB]:,} MRREL rows, "
                f"{counts[STEP_QUERIES]:,} queries, {len(frame):,} with at most {settings.max_answers} answers), fewer "
                f"than per_relation={settings.per_relation:,}"
            )
            if not settings.allow_fewer:
                raise UmlsInputError(
                    f"{message}; lower per_relation, leave the relation out (--set relations=...), or "
                    f"--set allow_fewer=true to build all {len(frame):,}"
                )
            logger.warning(f"{message}: building all {len(frame):,} of them (the card says so)")
        sampled[relation] = [frame[i] for i in sample_indices(len(frame), settings.per_relation, settings.seed)]
    return sampled


@dataclass
class UmlsBuildStats:
    """What the card says about a build from a UMLS release."""

    settings: UmlsSettings
    source: UmlsSource
    extraction: UmlsExtraction
    sampled: dict[str, int]
    hard: dict[str, int]
    data_dir: str | None = None


# The statistics of the latest UMLS build of each config, read by `card_context`; a release build
# of the config removes its entry.
UMLS_BUILD_STATS: dict[str, UmlsBuildStats] = {}


# --- card text for either source ---


def release_build_text(row_check: str) -> str:
    """How a build from the release files was made, for the card."""
    return f"""from the
official release files at commit `{RELEASE_COMMIT}` ({RELEASE_TREE}):
`prompts.csv` and, per relation, `2021AA/{{relation}}_1000.csv` and `2021AA/{{relation}}_{{N}}_hard.csv`.

- Row check: {row_check} Every row of a relation file must be distinct (same values in all
  release columns = a duplicate); a hard file may not repeat a row either.
- `answers` are the release's de-duplicated gold names in their original order, with the CUI of
  each in `answer_cuis`. Every name keeps its UTF-8 spelling (the released probing code read the
  names as latin-1, which made 8 queries unanswerable; this dataset does not).
- `id` is `{{relation}}-{{row}}` with the row index in the full release file, so a hard row has the
  same id as its full row.
- To regenerate the benchmark from your own, newer UMLS release instead, see
  `medprobe build medlama --umls-dir META` (the MedLAMA paragraph of the medprobe README)."""


_RELEASE_HARD_NOTE = """The build checks the rule against the released hard files and stops
if a single row differs: the rule selects the released hard rows exactly (15,329 of 19,000 on this
release). The recomputed `avg_rouge_l` equals the released column on all but a few dozen rows,
where the authors' summary-level ROUGE-L treats repeated words differently; on those rows too the
rule decides as the release did."""


def source_context(built: dict[str, datasets.DatasetDict], params: dict) -> dict[str, str]:
    """The card text that depends on the source: the release files or the user's UMLS release."""
    stats = next((UMLS_BUILD_STATS[c] for c in built if c in UMLS_BUILD_STATS), None)
    common = {"answers_summary": answers_summary(built)}
    if stats is None:
        return {
            **common,
            "umls_version": "2021AA",
            "sources": "SNOMED CT, NCI, MED-RT",
            "relation_count": str(len(RELATIONS)),
            "source_note": "",
            "how_it_was_built": release_build_text(row_check_note(params.get("rows_per_relation", FULL_SIZE))),
            "hard_rule_note": _RELEASE_HARD_NOTE,
        }
    settings, version = stats.settings, stats.source.version
    return {
        **common,
        "umls_version": version,
        "sources": ", ".join(settings.sabs),
        "relation_count": str(len(settings.relations)),
        "source_note": (
            f"; this copy was regenerated from the UMLS {version} release by the authors' generation "
            "procedure (see How it was built), not copied from their 2021AA files"
        ),
        "how_it_was_built": umls_build_text(stats),
        "hard_rule_note": "The notebook derived its hard files the same way, from the same drawn rows.",
        "build_command": umls_build_command(stats),
    }


def answers_summary(built: dict[str, datasets.DatasetDict]) -> str:
    config = "full" if "full" in built else next(iter(built))
    sizes = [len(answers) for answers in built[config]["test"]["answers"]]
    if not sizes:
        return "no gold answers (this build is empty)"
    return f"up to {max(sizes)} gold answers ({sum(sizes) / len(sizes):.1f} on average in `{config}`)"


def _setting_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def changed_settings(settings: UmlsSettings) -> dict[str, str]:
    """The parameters that differ from the notebook's defaults, as --set values."""
    defaults = umls_settings(MedlamaConfig(umls_dir=settings.umls_dir))
    return {
        name: _setting_text(getattr(settings, name))
        for name in UMLS_PARAMETERS[1:]
        if getattr(settings, name) != getattr(defaults, name)
    }


def umls_build_command(stats: UmlsBuildStats) -> str:
    """The command for the card; the local folders are named generically, not by their paths."""
    words = ["medprobe", "build", "medlama", "--umls-dir", "UMLS_DIR"]
    if stats.data_dir:
        words += ["--data-dir", "DATA_DIR"]
    for name, value in changed_settings(stats.settings).items():
        words += ["--set", f"{name}={value}"]
    return shlex.join(words).replace("UMLS_DIR", "<META folder>").replace("DATA_DIR", "<data folder>")


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def umls_parameters_table(settings: UmlsSettings) -> str:
    notebook = {
        "relations": "the 19 relations of `final_19_relation.txt`",
        "sabs": ", ".join(NOTEBOOK_SABS),
        "per_relation": "1000",
        "seed": "2021 (`random_state`)",
        "max_answers": "10 (`tail_names_len <= 10`)",
        "names": "atom (another fallback: step 5)",
        "drop_suppressed": "false (no SUPPRESS filter)",
        "allow_fewer": "none (pandas stops on a short relation)",
    }
    rows = []
    for name, reference in notebook.items():
        value = getattr(settings, name)
        shown = f"the {len(value)} relations" if name == "relations" and value == RELATIONS else _setting_text(value)
        rows.append([f"`{name}`", shown, reference])
    return _markdown_table(["parameter", "this build", "the notebook"], rows)


def umls_counts_table(stats: UmlsBuildStats) -> str:
    settings, counts = stats.settings, stats.extraction.counts
    header = [
        "relation",
        "MRREL rows (RELA)",
        "in sabs",
        "not suppressed" if settings.drop_suppressed else "suppressed, kept",
        "with English names",
        "queries",
        f"≤ {settings.max_answers} answers",
        "`full`",
        "`hard`",
    ]
    rows, totals = [], Counter()
    for relation in settings.relations:
        step = counts[relation]
        suppression = step[STEP_SUPPRESS] if settings.drop_suppressed else stats.extraction.suppressed_kept[relation]
        values = [
            step[STEP_RELA],
            step[STEP_SAB],
            suppression,
            step[STEP_NAMED],
            step[STEP_QUERIES],
            step[STEP_MAX_ANSWERS],
            stats.sampled[relation],
            stats.hard.get(relation, 0),
        ]
        totals.update(dict(enumerate(values)))
        rows.append([f"`{relation}`"] + [f"{v:,}" for v in values])
    rows.append(["**total**"] + [f"**{totals[i]:,}**" for i in range(len(header) - 1)])
    return _markdown_table(header, rows)


def _names_step(settings: UmlsSettings, extraction: UmlsExtraction) -> str:
    if settings.names == "atom":
        unusable = "not in MRCONSO or not English" + (" or suppressed" if settings.drop_suppressed else "")
        text = (
            "Each side is named by the string of the atom the row names (`AUI2` for the head, `AUI1` for the "
            "answer): the source's own English term, so a concept that two sources name differently gives two "
            f"queries, as in the release. When the row names no atom, or its atom is {unusable}, the concept's "
            "English preferred name is used instead. The notebook fell back to whichever string of the concept "
            "came last in MRCONSO, in any language: this is the one deliberate difference from it."
        )
    else:
        text = (
            "Each side is named by its concept's English preferred name (`names=preferred`; the notebook names "
            "each side by the row's atom), so every head concept gives one query."
        )
    counts = "; ".join(
        f"{NAME_HOW[how]}: {n:,}" for how, n in sorted(extraction.name_sources.items(), key=lambda i: list(NAME_HOW).index(i[0]))
    )
    return (
        f"{text} A concept's English preferred name is its `LAT=ENG` MRCONSO row ranked by: not suppressed, "
        "`TS=P`, `STT=PF`, `ISPREF=Y` (the UMLS definition of the preferred name), the first in the file on ties"
        + (", suppressed names left out" if settings.drop_suppressed else "")
        + f". A row whose head or answer has no English name is dropped. Sides of rows named {counts}."
    )


def umls_build_text(stats: UmlsBuildStats) -> str:
    settings, source, extraction = stats.settings, stats.source, stats.extraction
    prompts = "read from the data folder" if stats.data_dir else "downloaded"
    suppression = (
        "MRREL rows whose `SUPPRESS` is not `N` are dropped (`drop_suppressed=true`; the notebook keeps them)."
        if settings.drop_suppressed
        else "MRREL rows are kept whatever their `SUPPRESS` flag, as in the notebook (`drop_suppressed=false`); "
        "the table counts the suppressed rows kept."
    )
    used = ", ".join(f"{sab} {n:,}" for sab, n in _sab_totals(extraction, settings, True)) or "none"
    unused = ", ".join(f"{sab} {n:,}" for sab, n in _sab_totals(extraction, settings, False)) or "none"
    short = [r for r in settings.relations if stats.sampled[r] < settings.per_relation]
    short_note = ""
    if short:
        short_note = (
            "\n\n**Fewer than `per_relation`.** "
            + "; ".join(f"`{r}`: {stats.sampled[r]:,} queries" for r in short)
            + f" (of {settings.per_relation:,} asked): built whole (`allow_fewer=true`), with a warning at build time."
        )
    mrrel, mrconso = extraction.mrrel, extraction.mrconso
    return f"""from a licensed copy of the UMLS Metathesaurus release **{source.version}** (the name {source.version_from} gives): `MRREL.RRF` ({mrrel.lines:,} lines, {mrrel.bytes / 1e6:,.1f} MB) and `MRCONSO.RRF` ({mrconso.lines:,} lines, {mrconso.bytes / 1e6:,.1f} MB) of its META folder, each streamed once. The generation follows the authors' notebook, [`notebooks/data_prep/generate_biomed_lama.ipynb`]({NOTEBOOK_URL}), which made the 2021AA release; the prompts are the release's `prompts.csv` (commit `{RELEASE_COMMIT}`), {prompts}. The same files and parameters give the same Parquet files, byte for byte; another seed draws another sample.

{umls_parameters_table(settings)}

The steps, in order (their counts for this build are in the table below):

1. **Relations.** MRREL rows whose `RELA` is one of the {len(settings.relations)} selected relations.
2. **Sources.** ... and whose `SAB` is one of {", ".join(settings.sabs)}. Rows per source: {used}; rows of these relations in other sources, not used: {unused}.
3. **Suppression.** {suppression}
4. **Direction.** A row `CUI1|AUI1|…|CUI2|AUI2|…|RELA|…` reads "CUI2 RELA CUI1" (in UMLS, `RELA` is the relation of the second concept to the first), as in the notebook: the head [X] is `CUI2`, the answer `CUI1`.
5. **Names.** {_names_step(settings, extraction)}
6. **Queries.** Rows are grouped into one query per (head CUI, head name, relation); `answers` are the answer names de-duplicated in MRREL order and `answer_cuis` the CUI of the last row that gives each name (the notebook's name-to-CUI map: a name that two answer concepts share is one answer).
7. **At most {settings.max_answers} answers.** Queries with more distinct answer names are dropped.
8. **Sample.** Per relation, the queries are sorted by (head CUI, head name) and `per_relation` of them are drawn without replacement by numpy's `RandomState(seed)`, a fresh generator per relation: exactly what pandas' `DataFrame.sample(n, random_state=seed)` did in the notebook. Rows keep the drawn order and `id` (`{{relation}}-{{row}}`) numbers them; this rule reproduces the row order of all 19 files of the 2021AA release.
9. **hard**: the rule below, on the drawn rows.

Not done, as in the notebook: no semantic-type filter (MRSTY.RRF is not read), no language filter on MRREL, no removal of answers equal to the head, no de-duplication of heads across relations.

Counts at every filter:

{umls_counts_table(stats)}{short_note}"""  # noqa: E501 - one markdown paragraph a line, as the card shows it


def _sab_totals(extraction: UmlsExtraction, settings: UmlsSettings, selected: bool) -> list[tuple[str, int]]:
    totals: Counter = Counter()
    for (relation, sab), rows in extraction.rows_by_sab.items():
        if relation in settings.relations and (sab in settings.sabs) == selected:
            totals[sab] += rows
    return sorted(totals.items())
