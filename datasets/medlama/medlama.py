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

This module is self-contained (the datasets library and rouge-score only) and is loaded by
path: `medprobe build medlama` turns it into a Hub folder of Parquet files plus a card.
"""

from __future__ import annotations

import ast
import csv
import inspect
from collections import Counter
from dataclasses import dataclass
from dataclasses import fields
from pathlib import Path

import datasets
from rouge_score import rouge_scorer
from rouge_score import tokenizers

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
    "head_cui", "head_name", "rel", "tail_cuis_list", "tail_names_list", "tail_names",
    "tail_cuis", "tail_cuis_len", "tail_names_len", "avg_match", "avg_rouge_l",
)  # fmt: skip
PROMPT_COLUMNS = ("pid", "human_prompt")
HARD_THRESHOLD = 0.1
NAME_SEPARATOR = " || "

_CITATION = """\
@inproceedings{meng-etal-2022-rewire,
    title = "Rewire-then-Probe: A Contrastive Recipe for Probing Biomedical Knowledge of Pre-trained Language Models",
    author = "Meng, Zaiqiao and Liu, Fangyu and Shareghi, Ehsan and Su, Yixuan and Collins, Charlotte and Collier, Nigel",
    booktitle = "Proceedings of the 60th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)",
    year = "2022",
    pages = "4798--4810",
    url = "https://aclanthology.org/2022.acl-long.329",
}
"""

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
    "id": "`{relation}-{row}`: the row index in the full release file (a hard row keeps its full id)",
    "relation": "one of the 19 UMLS relations",
    "head_cui": "UMLS CUI of the head entity [X]",
    "head_name": "name of the head entity [X]",
    "answers": "gold answer names, de-duplicated in release order",
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
            f"{path}, row {row_number}, column {column}: expected a non-empty list of strings, "
            f"got {value[:120]!r}"
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
            raise MedlamaFormatError(
                f"{path}, row {row_number}, column rel: expected {relation!r}, got {raw['rel']!r}"
            )
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
                f"{path}, row {row_number}: the human_prompt of {row['pid']!r} must contain "
                f"[X] and [Y], got {template!r}"
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
        for label, keys in (("selected by the rule, not in the hard file", only_derived),
                            ("in the hard file, not selected by the rule", only_released)):
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
    """`full` or `hard`; `medprobe build medlama --set rows_per_relation=N` relaxes the size check.

    rows_per_relation: how many distinct rows each full release file must hold. The release has
    1,000 and the default insists on it, so a duplicated row or a truncated file stops the build;
    a different N (0: any number) is for a user's own regenerated data, and the card says so.
    """

    rows_per_relation: int | None = FULL_SIZE


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
        raise ValueError(
            f"medlama: rows_per_relation must be a whole number >= 0 (0: any number of rows), got {value!r}"
        )
    return value


class Medlama(datasets.GeneratorBasedBuilder):
    """MedLAMA built from the official release files."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = MedlamaConfig
    BUILDER_CONFIGS = [
        MedlamaConfig(name="full", version=VERSION, description="All 19,000 queries (1,000 per relation)."),
        MedlamaConfig(name="hard", version=VERSION, description="The 15,329 queries with avg_match and ROUGE-L below 0.1."),
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

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES,
            homepage="https://github.com/cambridgeltl/medlama",
            license="UMLS Metathesaurus License (UMLS-derived; see the dataset card)",
            citation=_CITATION,
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
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
                yield example_id, {
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
                }


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
            f"more than one hard file for a relation, keep exactly one {{relation}}_{{N}}_hard.csv each: "
            + "; ".join(ambiguous)
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
        "row_check": row_check_note((params or {}).get("rows_per_relation", FULL_SIZE)),
        "relations_table": "\n".join(lines),
        "answer_space_sizes": "; ".join(answer_space),
        "release_commit": RELEASE_COMMIT,
        "release_tree": RELEASE_TREE,
        "citation": _CITATION.strip(),
    }
