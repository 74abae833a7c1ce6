"""MST generator: an independent checker re-derives every label from the text, plus determinism,
balance, the reference-range table, the card, and errors for bad parameters.

The checker below shares no code with the builder (datasets/mst/): it parses the sentences with its own
patterns and its own prefix table, and decides labels with fractions (the builder uses decimals).
"""

import hashlib
import re
from collections import Counter
from decimal import Decimal
from fractions import Fraction

import pytest
from datasets import load_dataset

from built_folder import data_file
from medprobe.building.build import build
from medprobe.cli import main
from medprobe.resources import load_builder_module

mst = load_builder_module("mst")

TASKS = ("comparison", "argminmax", "sorting", "unit_conversion", "reference_range")
DEFAULT_SIZES = {"train": 2000, "validation": 500, "test": 1000}
CHOICES = {
    "comparison": ["larger", "smaller"],
    "argminmax": ["largest", "smallest", "middle"],
    "sorting": ["increasing", "decreasing", "random"],
    "unit_conversion": ["equal", "different"],
    "reference_range": ["normal", "abnormal"],
}

# --- the independent checker -------------------------------------------------------------------

EXPONENT = {"k": 3, "": 0, "d": -1, "c": -2, "m": -3, "µ": -6, "n": -9}
BASES = ("mol", "g", "L", "m")  # "mol" before "m": "mmol" is milli-mole, "mm" milli-metre
MEASUREMENT = re.compile(r"^(\d+(?:\.\d+)?) (\S+)$")
PLAIN_NUMBER = re.compile(r"^(0|[1-9]\d*)(\.\d*[1-9])?$")  # no exponent, no leading or trailing zeros
PATTERNS = {
    "comparison": re.compile(r"^(.+) is \[MASK\] than (.+)\.$"),
    "argminmax": re.compile(r"^The \[MASK\] value among (.+?) is ([^,]+)\.$"),
    "sorting": re.compile(r"^Sorting (.+) in \[MASK\] order gives (.+)\.$"),
    "unit_conversion": re.compile(r"^(.+) and (.+) are \[MASK\]\.$"),
    "reference_range": re.compile(r"^The (.+) level of (\S+ \S+) is \[MASK\]\.$"),
}


def split_unit(unit_text: str) -> tuple[str, str]:
    """'mg/dL' -> ('m', 'g/dL'); 'mm' -> ('m', 'm'); 'mol' -> ('', 'mol')."""
    numerator, slash, denominator = unit_text.partition("/")
    base = next(b for b in BASES if numerator.endswith(b))
    prefix = numerator[: -len(base)]
    assert prefix in EXPONENT, f"unknown prefix in {unit_text!r}"
    return prefix, base + slash + denominator


def parse(measurement: str) -> dict:
    match = MEASUREMENT.match(measurement)
    assert match, f"not a measurement: {measurement!r}"
    number, unit_text = match.groups()
    prefix, unit = split_unit(unit_text)
    assert PLAIN_NUMBER.match(number), f"not plain decimal notation: {number!r}"
    shown = Fraction(number)
    return {
        "text": measurement,
        "number": number,
        "prefix": prefix,
        "unit": unit,
        "shown": shown,
        "magnitude": shown * Fraction(10) ** EXPONENT[prefix],
    }


def items(text: str) -> list[dict]:
    return [parse(part) for part in text.split(", ")]


def derive(task: str, row: dict) -> tuple[str, list[dict], list[str]]:
    """(label word, measurements in text order, problems) from the text and the stored range."""
    match = PATTERNS[task].match(row["text"])
    assert match, f"{task}: text does not match the template: {row['text']!r}"
    problems = []
    if task == "comparison":
        a, b = parse(match[1]), parse(match[2])
        measured = [a, b]
        word = "larger" if a["magnitude"] > b["magnitude"] else "smaller"
    elif task == "argminmax":
        listed, answer = items(match[1]), parse(match[2])
        measured = [*listed, answer]
        if answer["text"] not in [m["text"] for m in listed]:
            problems.append("the answer is not an element of the list")
        values = [m["magnitude"] for m in listed]
        word = {max(values): "largest", min(values): "smallest"}.get(answer["magnitude"], "middle")
    elif task == "sorting":
        listed, result = items(match[1]), items(match[2])
        measured = [*listed, *result]
        if sorted(m["text"] for m in listed) != sorted(m["text"] for m in result):
            problems.append("the result is not a reordering of the list")
        values = [m["magnitude"] for m in result]
        word = "increasing" if values == sorted(values) else "decreasing" if values == sorted(values, reverse=True) else "random"
    elif task == "unit_conversion":
        a, b = parse(match[1]), parse(match[2])
        measured = [a, b]
        word = "equal" if a["magnitude"] == b["magnitude"] else "different"
        if a["prefix"] == b["prefix"]:
            problems.append("an equal/different pair with the same prefix")
        if word == "different" and abs(a["magnitude"] - b["magnitude"]) * 10 < min(a["magnitude"], b["magnitude"]):
            problems.append("a 'different' pair less than 10 % apart")
    else:
        entity, value = match[1], parse(match[2])
        measured = [value]
        if entity != row["entity"]:
            problems.append(f"entity {entity!r} != stored {row['entity']!r}")
        reference_prefix, reference_unit = split_unit(row["reference_unit"])
        if reference_unit != value["unit"]:
            problems.append(f"unit {value['unit']} does not match the range unit {row['reference_unit']}")
        low, high = Fraction(row["reference_low"]), Fraction(row["reference_high"])
        converted = value["magnitude"] / Fraction(10) ** EXPONENT[reference_prefix]
        margin = (high - low) / 10
        word = "normal" if low <= converted <= high else "abnormal"
        if not (low + margin <= converted <= high - margin or converted <= low - margin or converted >= high + margin):
            problems.append(f"{converted} is within 10 % of the range width of a limit")
    return word, measured, problems


def check_row(task: str, row: dict) -> list[str]:
    word, measured, problems = derive(task, row)
    if row["choices"][row["label"]] != word:
        problems.append(f"label {row['choices'][row['label']]!r}, the checker says {word!r}")
    if row["values"] != [m["number"] for m in measured]:
        problems.append(f"stored values {row['values']} != text {[m['number'] for m in measured]}")
    if row["prefixes"] != [m["prefix"] for m in measured] or row["units"] != [m["unit"] for m in measured]:
        problems.append("stored prefixes/units differ from the text")
    if not all(Fraction(1, 1000) <= m["shown"] < 1000 for m in measured):
        problems.append("a number outside [0.001, 1000)")
    if task in ("comparison", "argminmax", "sorting"):
        distinct = {m["text"]: m["magnitude"] for m in measured}
        if len(set(distinct.values())) != len(distinct) or len({m["unit"] for m in measured}) != 1:
            problems.append("measurements of a row are not distinct values of one unit")
    return problems


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """All five configs at the default sizes and seed, built into a Hub folder."""
    out = tmp_path_factory.mktemp("mst_hub")
    build("mst", out)
    return out


@pytest.fixture(scope="module")
def loaded(hub):
    return {task: load_dataset(str(hub), task) for task in TASKS}


def parquet_digests(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


# --- the generated data --------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_checker_agrees_with_every_label_at_default_sizes(loaded, task):
    dataset_dict = loaded[task]
    assert {split: ds.num_rows for split, ds in dataset_dict.items()} == DEFAULT_SIZES
    problems = []
    for ds in dataset_dict.values():
        for row in ds:
            assert row["choices"] == CHOICES[task]
            problems += [f"{row['id']}: {p}: {row['text']}" for p in check_row(task, row)]
    assert problems == [], f"{len(problems)} problem(s), first: {problems[:5]}"


@pytest.mark.parametrize("task", TASKS)
def test_labels_are_balanced_and_no_sentence_repeats(loaded, task):
    texts = []
    for split, ds in loaded[task].items():
        shares = Counter(ds["label"])
        uniform = 1 / len(CHOICES[task])
        assert set(shares) == set(range(len(CHOICES[task])))
        assert all(abs(count / ds.num_rows - uniform) <= 0.02 for count in shares.values()), (split, shares)
        texts += ds["text"]
    assert len(set(texts)) == len(texts)


def test_every_prefix_unit_and_analyte_is_drawn(loaded):
    measured = [row for task in TASKS[:4] for row in loaded[task]["train"]]
    assert {p for row in measured for p in row["prefixes"]} == set(EXPONENT)
    assert {u for row in measured for u in row["units"]} == {"g", "L", "m", "mol"}
    reference = loaded["reference_range"]["train"]
    assert set(reference["entity"]) == {a.name for a in mst.measures.REFERENCE_RANGES}
    conventional = sum(r["prefixes"][0] + r["units"][0] == r["reference_unit"] for r in reference)
    assert 0.4 < conventional / reference.num_rows < 0.6  # half in the conventional unit
    below = sum(
        Fraction(r["values"][0]) < Fraction(r["reference_low"])
        for r in reference
        if r["prefixes"][0] + r["units"][0] == r["reference_unit"]
    )
    assert below > 0  # abnormal values on both sides (above is checked by the label share)


def test_unit_conversion_negatives_mix_slipped_prefixes_and_other_digits(loaded):
    kinds = Counter()
    for row in loaded["unit_conversion"]["train"]:
        if row["choices"][row["label"]] == "different":
            a, b = (Fraction(v) * Fraction(10) ** EXPONENT[p] for v, p in zip(row["values"], row["prefixes"]))
            ratio = max(a, b) / min(a, b)
            kinds["shift" if ratio in (10, 100, 1000) else "digits"] += 1
    assert kinds["shift"] > 300 and kinds["digits"] > 300


def test_same_seed_gives_byte_identical_parquet_and_another_seed_differs(hub, tmp_path):
    again = tmp_path / "again"
    build("mst", again)
    assert parquet_digests(again) == parquet_digests(hub) and len(parquet_digests(hub)) == 15
    other = tmp_path / "other"
    build("mst", other, configs=["comparison"], params={"seed": 7})
    assert data_file(other, "comparison").read_bytes() != data_file(hub, "comparison").read_bytes()


@pytest.mark.parametrize("length", [2, 5])
def test_other_list_lengths_pass_the_checker(tmp_path, length):
    build(
        "mst",
        tmp_path,
        configs=["argminmax", "sorting"],
        params={"list_length": length, "train_size": 300, "validation_size": 30, "test_size": 90},
    )  # noqa: E501
    for task in ("argminmax", "sorting"):
        ds = load_dataset(str(tmp_path), task, split="train")
        expected = CHOICES[task][:2] if length == 2 else CHOICES[task]
        for row in ds:
            assert row["choices"] == expected and check_row(task, row) == []
            assert len(row["values"]) == (length + 1 if task == "argminmax" else 2 * length)
        assert max(Counter(ds["label"]).values()) - min(Counter(ds["label"]).values()) <= 1


def test_units_and_prefixes_parameters_restrict_the_draws(tmp_path):
    params = {"units": "g", "prefixes": "milli,u,none", "train_size": 200, "validation_size": 10, "test_size": 10}
    build("mst", tmp_path, configs=["comparison", "unit_conversion"], params=params)
    for task in ("comparison", "unit_conversion"):
        ds = load_dataset(str(tmp_path), task, split="train")
        assert {u for row in ds for u in row["units"]} == {"g"}
        assert {p for row in ds for p in row["prefixes"]} == {"m", "µ", ""}
        assert all(check_row(task, row) == [] for row in ds)


# --- the reference-range table and the card -------------------------------------------------------


def test_reference_table_has_20_plus_analytes_with_room_on_both_sides():
    mst.measures.check_reference_table()
    assert len(mst.measures.REFERENCE_RANGES) >= 20
    for analyte in mst.measures.REFERENCE_RANGES:
        regions = mst.measures.sampling_regions(analyte)
        assert (
            regions["below"].high
            < analyte.low
            < regions["normal"].low
            < regions["normal"].high
            < analyte.high
            < regions["above"].low
        )


def test_card_documents_templates_units_ranges_and_determinism(hub):
    card = (hub / "README.md").read_text(encoding="utf-8")
    assert "license: cc-by-4.0" in card and "extra_gated" not in card
    for task in mst.generator.TASKS.values():
        assert task.template in card and " / ".join(task.choices) in card
    for analyte in mst.measures.REFERENCE_RANGES:
        assert f"| {analyte.name} |" in card
    for needle in (
        "vary by laboratory",
        "| `µ` | micro | 10^-6 |",
        "| `mol` | mole |",
        "SHA-256",
        "byte-identical",
        "`medprobe build mst`",
    ):
        assert needle in card
    assert load_dataset(str(hub), split="test").num_rows == 1000  # the default config loads bare


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, message",
    [
        ({"train_size": 0}, "train_size must be an integer >= 1"),
        ({"test_size": -5}, "test_size must be an integer >= 1"),
        ({"validation_size": 1.5}, "validation_size must be an integer"),
        ({"train_size": "many"}, "train_size must be an integer"),
        ({"test_size": True}, "test_size must be an integer"),
        ({"units": "g,ft"}, r"unknown unit\(s\) 'ft'.*known: g \(gram\)"),
        ({"units": ""}, r"unknown unit"),
        ({"prefixes": "k,p"}, r"unknown prefix 'p'.*known: k \(kilo\)"),
        ({"list_length": 1}, "list_length must be an integer from 2 to 10"),
        ({"trainsize": 10}, r"unknown parameter\(s\) trainsize; known: seed, train_size"),
        ({"seed": "abc"}, "seed must be an integer"),
    ],
)
def test_bad_parameters_are_clear_errors(tmp_path, params, message):
    with pytest.raises(ValueError, match=message):
        build("mst", tmp_path, configs=["argminmax"], params=params)


def test_unit_conversion_needs_two_nearby_prefixes(tmp_path):
    with pytest.raises(ValueError, match="unit_conversion needs two prefixes 1 to 5 decades apart"):
        build("mst", tmp_path, configs=["unit_conversion"], params={"prefixes": "k,n"})


def test_exhausted_value_space_names_the_split_and_row(monkeypatch):
    constant = mst.generator.Row("1 g is [MASK] than 2 g.", [mst.measures.Measurement(Decimal(1), "", "g")])
    monkeypatch.setitem(mst.generator.ROW_GENERATORS, "comparison", lambda draws, settings, answer: constant)
    settings = mst.settings_of(mst.MstConfig(name="comparison", train_size=3))
    with pytest.raises(ValueError, match="could not draw a new distinct sentence for train row 1"):
        mst.generator.generate("comparison", settings)


def test_cli_prints_bad_parameters_as_one_line(tmp_path, capsys):
    code = main(["build", "mst", "--out", str(tmp_path), "--config", "sorting", "--set", "list_length=1"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("medprobe: error: mst: list_length") and "Traceback" not in err


def test_checker_catches_wrong_labels_and_stored_fields(loaded):
    for task in TASKS:
        row = dict(loaded[task]["test"][0])
        flipped = {**row, "label": (row["label"] + 1) % len(row["choices"])}
        assert any("the checker says" in p for p in check_row(task, flipped))
        changed = {**row, "values": ["999", *row["values"][1:]]}
        assert any("stored values" in p for p in check_row(task, changed))
