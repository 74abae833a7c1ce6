"""`medprobe review export`: blinded rating sheets for a seeded sample of a ranking run's queries.

The run is read from its files only: the results JSON (which data, which split), its per-item
outcomes (the rank of each query's best gold answer, checked against its sha256), the predictions
JSONL (`{"id", "predictions"}` per query) and the data itself (each query's text and gold answers).
The gold ranks recomputed from predictions and data must equal the outcomes file's: a check that
the three belong together.

DIR gets: `raters/<rater>.csv` (one row per query and prediction, an empty `rating` column),
`raters/<rater>.label-studio.json` (Label Studio tasks), `label-studio-config.xml` (the 1-5 scale),
`scale.md`, and `manifest.json`, which holds the gold answers and ties every file to the run by
sha256, and pins each item's content (the `digest` of its query, prediction and rank, `row_digest`):
hand raters their own sheet and scale.md, never the manifest.

Every export has an id (`export_id` in the manifest), a digest of what its sheets ask: the run, the
sampled queries with their gold answers, the items and their ranks, the raters and the sheet layout
(never a path). Every sheet carries it, in an `export` column of every CSV row and in each Label
Studio task's `data.export`, so `review import` tells the sheets of one export from another's with the
same item ids. Two exports that ask the same (same run, options and seed) share it, and their sheets
are interchangeable; any difference a rating depends on gives another id.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from medprobe.contracts import UserError
from medprobe.digests import json_digest, sha256_file, sha256_text
from medprobe.local_paths import check_local_path
from medprobe.records import load_run
from medprobe.records.outcomes import outcomes_path
from medprobe.records.record import RunRecord
from medprobe.review.scale import SCALE, scale_markdown
from medprobe.stats import Outcomes

FORMAT = "medprobe-review/1"  # manifests without `export_id` were written before export ids (medprobe.review.ratings)
EXPORT_COLUMN = "export"  # the CSV column (and Label Studio data key) holding the export id
CONFIG_NAME = "label-studio-config.xml"
RATER_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass
class Query:
    """One sampled query: its label on the sheets (Q001...), the run's id, text, relation and gold answers."""

    label: str
    id: str
    text: str
    relation: str
    gold: list[str]
    predictions: list[str]  # the run's top-K, best first


def rater_names(value: str) -> list[str]:
    """`--raters 3` -> rater1..rater3; `--raters ana,ben` -> those names."""
    if value.strip().isdigit():
        count = int(value)
        if count < 1:
            raise UserError(f"--raters needs at least one rater, got {value}")
        return [f"rater{index}" for index in range(1, count + 1)]
    names = [name.strip() for name in value.split(",")]
    bad = [name for name in names if not RATER_NAME.match(name)]
    if bad:
        raise UserError(f"--raters: {bad[0]!r} is not a usable rater name (letters, digits, . _ - only)")
    if len(set(names)) != len(names):
        raise UserError(f"--raters names a rater twice: {value}")
    return names


# --- the run's files ------------------------------------------------------------------------------------


def find_predictions(run: Path, record: RunRecord, explicit: str | None) -> Path:
    """--predictions, else the file the run's command wrote with --predictions (beside the run), else
    `<run stem>.predictions.jsonl` or `predictions.jsonl` beside the run."""
    if explicit:
        path = check_local_path(explicit, "--predictions", "give the run's --predictions file")
        if not path.is_file():
            raise UserError(f"--predictions {explicit} is a folder; give the run's --predictions file")
        return path
    named = re.search(r"--predictions[ =](\S+)", record.command or "")
    candidates = [run.parent / Path(named.group(1)).name] if named else []
    candidates += [run.with_name(f"{run.stem}.predictions.jsonl"), run.with_name("predictions.jsonl")]
    for path in candidates:
        if path.is_file():
            return path
    raise UserError(
        f"{run}: found no predictions file beside it (looked for {', '.join(p.name for p in candidates)}); "
        "probe with --predictions FILE and pass it here with --predictions"
    )


def read_predictions(path: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            row = json.loads(line)
            names = row["predictions"]
            found[str(row["id"])] = [str(name) for name in names or []]
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise UserError(f'{path}, line {number}: not a predictions line ({err}); expected {{"id", "predictions"}}') from None
    return found


def load_rows(dataset: str, config: str | None, split: str) -> dict[str, dict]:
    """id -> {"query", "answers", "relation"} of the run's data (loaded as `medprobe probe` loads it)."""
    from medprobe.loading import load_probe_dataset

    ds = load_probe_dataset(dataset, config, split)
    missing = [name for name in ("id", "query", "answers") if name not in ds.column_names]
    if missing:
        raise UserError(f"dataset {dataset!r} has no {', '.join(missing)} column(s): not a ranking task's data")
    relations = ds["relation"] if "relation" in ds.column_names else [""] * ds.num_rows
    return {
        str(i): {"query": q, "answers": list(a), "relation": r}
        for i, q, a, r in zip(ds["id"], ds["query"], ds["answers"], relations)
    }


def best_gold_rank(predictions: list[str], gold: list[str]) -> float:
    return next((float(rank) for rank, name in enumerate(predictions, start=1) if name in set(gold)), float("nan"))


def sample_queries(
    run: Path,
    record: RunRecord,
    outcomes: Outcomes,
    predictions: dict[str, list[str]],
    rows: dict[str, dict],
    sample: int,
    top_k: int,
    seed: int,
) -> list[Query]:
    """`sample` queries drawn with `seed` among those with predictions, in drawn order, checked against the outcomes."""
    ranks = dict(zip(outcomes.ids, outcomes.columns["rank"])) if "rank" in outcomes.columns else None
    if ranks is None:
        raise UserError(f"{run}: its outcomes have no `rank` column; review export needs a ranking task's run")
    kept = max((len(names) for names in predictions.values()), default=0)
    if top_k > kept:
        raise UserError(f"--top-k {top_k}: the run kept only {kept} predictions per query")
    eligible = [item for item in outcomes.ids if predictions.get(item)]
    if sample > len(eligible):
        raise UserError(f"--sample {sample}: the run has only {len(eligible)} queries with predictions")
    drawn = np.random.default_rng(seed).choice(len(eligible), size=sample, replace=False)
    width = len(str(sample))
    queries = []
    for number, index in enumerate(drawn.tolist(), start=1):
        item = eligible[index]
        if item not in rows:
            raise UserError(f"query {item!r} of {run} is not in dataset {record.dataset!r}; pass the run's data with --dataset")
        row, names = rows[item], predictions[item]
        if not same_rank(best_gold_rank(names, row["answers"]), float(ranks[item])):
            raise UserError(
                f"query {item!r}: its gold answers in the data and its predictions give another rank than {outcomes_path(run).name} "
                "records; the data or the predictions file is not the run's (pass the right --dataset / --predictions)"
            )
        queries.append(Query(f"Q{number:0{width}d}", item, row["query"], row["relation"], row["answers"], names[:top_k]))
    return queries


def same_rank(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or a == b


# --- the sheets -----------------------------------------------------------------------------------------


def row_digest(query: str, prediction: str, rank: int) -> str:
    """What one row asks, pinned as its item's `digest`: `review import` recomputes it from a filled row's own query
    and prediction cells (spaces around them, which spreadsheets add or drop, aside) and the item's rank, so another
    export's row with its export cell rewritten cannot lend its rating to this export's item of the same id."""
    return json_digest({"query": query.strip(), "prediction": prediction.strip(), "rank": int(rank)})


def with_digests(items: list[dict], queries: list[Query]) -> list[dict]:
    texts = {query.label: query.text for query in queries}
    return [{**item, "digest": row_digest(texts[item["query"]], item["prediction"], item["rank"])} for item in items]


def items_of(queries: list[Query], rng: np.random.Generator) -> list[dict]:
    """Every (query, prediction) as an item; its number within the query follows a seeded shuffle, so
    neither the id nor the order on a sheet tells the model's rank."""
    items = []
    for query in queries:
        order = rng.permutation(len(query.predictions)).tolist()
        for position, rank_index in enumerate(order, start=1):
            name = query.predictions[rank_index]
            items.append(
                {
                    "item": f"{query.label}-{position}",
                    "query": query.label,
                    "prediction": name,
                    "rank": rank_index + 1,
                    "in_gold": name in set(query.gold),
                }
            )
    return items


def csv_header(show_gold: bool, relations: bool) -> list[str]:
    return [
        EXPORT_COLUMN,
        "item",
        "rater",
        "query",
        *(["relation"] if relations else []),
        "prediction",
        *(["gold"] if show_gold else []),
        "rating",
    ]


def sheet_rows(queries: list[Query], items: list[dict], rater_seed: int) -> list[tuple[Query, dict]]:
    """The items in this rater's order: queries as sampled, predictions shuffled per rater."""
    rng = np.random.default_rng(rater_seed)
    by_query: dict[str, list[dict]] = {}
    for item in items:
        by_query.setdefault(item["query"], []).append(item)
    rows = []
    for query in queries:
        found = by_query[query.label]
        rows += [(query, found[index]) for index in rng.permutation(len(found)).tolist()]
    return rows


def shown(export: str, rater: str, query: Query, item: dict) -> dict[str, str]:
    """What a rater sees of one prediction, in a sheet and in Label Studio alike (the gold only with --show-gold)."""
    return {
        EXPORT_COLUMN: export,
        "item": item["item"],
        "rater": rater,
        "query": query.text,
        "relation": query.relation,
        "prediction": item["prediction"],
    }


def sheet_csv(export: str, rater: str, rows: list[tuple[Query, dict]], header: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    for query, item in rows:
        values = {**shown(export, rater, query, item), "gold": "yes" if item["in_gold"] else "no", "rating": ""}
        writer.writerow([values[name] for name in header])
    return buffer.getvalue()


def label_studio_tasks(export: str, rater: str, rows: list[tuple[Query, dict]], show_gold: bool) -> str:
    """Label Studio's JSON import: one task per row, `data` holds what the config shows and the ids to match."""
    tasks = []
    for query, item in rows:
        data = shown(export, rater, query, item)
        if show_gold:
            data["gold"] = "in the UMLS gold answers" if item["in_gold"] else "not in the UMLS gold answers"
        tasks.append({"data": data})
    return json.dumps(tasks, indent=1, ensure_ascii=False) + "\n"


def label_studio_config(show_gold: bool) -> str:
    """The labelling config: query, prediction, and a required single choice on the 1-5 scale with each definition."""
    choices = "\n".join(
        f"    <Choice value={quoteattr(str(value))} hint={quoteattr(text)} alias={quoteattr(str(value))}/>"
        for value, text in SCALE.items()
    )
    gold = '  <Text name="gold" value="$gold"/>\n' if show_gold else ""
    legend = "\n".join(f'    <Text name="scale{value}" value={quoteattr(f"{value}: {text}")}/>' for value, text in SCALE.items())
    return (
        "<View>\n"
        '  <Header value="Query ($relation)"/>\n'
        '  <Text name="query" value="$query"/>\n'
        '  <Header value="Prediction for [Y]"/>\n'
        '  <Text name="prediction" value="$prediction"/>\n'
        f"{gold}"
        '  <Choices name="rating" toName="prediction" choice="single-radio" required="true" showInline="true">\n'
        f"{choices}\n"
        "  </Choices>\n"
        '  <View style="font-size: 90%">\n'
        f"{legend}\n"
        "  </View>\n"
        "</View>\n"
    )


# --- the export -----------------------------------------------------------------------------------------


def export_files(
    run: Path,
    *,
    sample: int,
    top_k: int,
    raters: list[str],
    seed: int = 0,
    show_gold: bool = False,
    predictions: str | None = None,
    dataset: str | None = None,
) -> dict[str, str]:
    """Every file of the export folder, by relative path (manifest.json last: it hashes the others)."""
    if sample < 1 or top_k < 1:
        raise UserError("--sample and --top-k must be positive integers")
    loaded = load_run(run)  # every number recomputed from its outcomes, or refused
    record = loaded.record
    predictions_path = find_predictions(run, record, predictions)
    found = read_predictions(predictions_path)
    rows = load_rows(dataset or record.dataset, record.config, record.split)
    queries = sample_queries(run, record, loaded.outcomes, found, rows, sample, top_k, seed)
    items = items_of(queries, np.random.default_rng([seed, 1]))
    header = csv_header(show_gold, any(q.relation for q in queries))
    manifest = {
        "format": FORMAT,
        "run": {
            "path": str(run.resolve()),
            "sha256": sha256_file(run),
            "benchmark": record.benchmark,
            "dataset": dataset or record.dataset,
            "config": record.config,
            "split": record.split,
            "prober": record.prober,
            "model": record.model,
            "predictions": {"path": str(predictions_path.resolve()), "sha256": sha256_file(predictions_path)},
            "outcomes": dict(record.outcomes or {}),
            "data_fingerprint": record.data_fingerprint,
            "k": sorted(int(name.split("@")[1]) for name in record.metrics if re.fullmatch(r"acc@\d+", name)),
        },
        "sample": sample,
        "top_k": top_k,
        "seed": seed,
        "show_gold": show_gold,
        "scale": {str(value): text for value, text in SCALE.items()},
        "raters": raters,
        "csv_header": header,
        "queries": [
            {
                "query": q.label,
                "id": q.id,
                "text": q.text,
                "relation": q.relation,
                "gold": q.gold,
                "gold_rank": best_gold_rank(q.predictions, q.gold),
            }
            for q in queries
        ],
        "items": items,
    }
    for query in manifest["queries"]:  # JSON has no NaN
        query["gold_rank"] = None if np.isnan(query["gold_rank"]) else int(query["gold_rank"])
    export = export_id(manifest)
    # the rows' digests after the id: they are made of what the id already covers, so ids stay those of older exports
    manifest["items"] = with_digests(items, queries)
    files: dict[str, str] = {"scale.md": scale_markdown(), CONFIG_NAME: label_studio_config(show_gold)}
    for index, rater in enumerate(raters):
        ordered = sheet_rows(queries, items, rater_seed=[seed, 2, index])
        files[f"raters/{rater}.csv"] = "\ufeff" + sheet_csv(export, rater, ordered, header)  # BOM: Excel reads it as UTF-8
        files[f"raters/{rater}.label-studio.json"] = label_studio_tasks(export, rater, ordered, show_gold)
    manifest = {"format": FORMAT, "export_id": export, **manifest}
    manifest["files"] = {name: sha256_text(text) for name, text in sorted(files.items())}
    files["manifest.json"] = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
    return files


def export_id(manifest: dict) -> str:
    """`rx-` and 12 hex digits of the sha256 of what the sheets ask (the manifest without its paths): letters
    first, so that a spreadsheet keeps it as text (a bare digest such as 12e45... reads as a number)."""
    run = manifest["run"]
    content = {**manifest, "run": {**run, "path": None, "dataset": None, "predictions": run["predictions"]["sha256"]}}
    return "rx-" + sha256_text(json.dumps(content, sort_keys=True, ensure_ascii=False))[:12]


def check_out(out: Path) -> None:
    """DIR must be new or empty (exporting again over sheets raters may be filling would lose their work), and
    replaceable by a rename: not a file, a mount point, or a read-only or immutable folder (one line, before any work)."""
    from medprobe.atomic_folder import check_output_folder

    check_output_folder(out, "--out")
    if out.is_dir() and any(out.iterdir()):
        raise UserError(f"--out {out} is not empty (a previous export? its sheets may be being filled); give a new folder")


def write_folder(out: Path, files: dict[str, str]) -> None:
    """All files into a staging folder beside DIR, then one swap: DIR is complete or absent."""
    from medprobe.atomic_folder import staged_folder

    # check_out again under the lock: another export may have written DIR meanwhile
    with staged_folder(out, "review export", refuse=check_out) as folder:
        folder.write_texts(files)


def export(run: str | Path, out: str | Path, **options) -> dict[str, str]:
    """Check DIR, build every file, write them all at once; returns the files written."""
    run, out = check_local_path(str(run), "", "give a results JSON written by medprobe probe --out"), Path(out)
    if not run.is_file():
        raise UserError(f"{run} is a folder, not a results JSON")
    check_out(out)
    files = export_files(run, **options)
    write_folder(out, files)
    return files
