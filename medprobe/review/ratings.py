"""`medprobe review import`: read and check the ratings of an export folder, all before any is used.

Accepted files: the filled CSV sheets (`raters/<rater>.csv`, header as exported; a spreadsheet may
add a BOM or write 5 as 5.0) and Label Studio's "JSON" export (a list of tasks, each with `data`
holding `item` and `rater`, and `annotations[].result[]` whose `value.choices` or `value.rating`
is the rating; cancelled annotations are skipped). Checked: every row's item id is in the manifest,
its rater is one of the manifest's, its rating is a whole number on the scale, no rater rates an
item twice, and every rater rated every item. The first problem found is one error naming the file
and the row (a CSV line number as a spreadsheet shows it, or a Label Studio task number).

Sheets belong to one export: every row carries its export's id (the CSV's `export` column, a Label
Studio task's `data.export`), which must be the manifest's `export_id`; item ids alone (Q1-1, ...)
repeat from one export to the next. An id is a cell anyone can retype, so each row must also show
what the manifest pins for its item: the digest of the row's own query and prediction (with the
item's rank) must be the item's `digest` (medprobe.review.sheets.row_digest), or a filled sheet of
another export with its ids rewritten would rate other questions. A manifest written before row
digests (or before export ids, whose sheets carry no id) is checked the same way against its items'
query and prediction text; `review import` notes it.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from medprobe.contracts import UserError
from medprobe.local_paths import check_local_path
from medprobe.review.scale import HIGHEST, LOWEST


@dataclass(frozen=True)
class Rating:
    rater: str
    item: str
    value: int
    where: str  # "FILE, row N" / "FILE, task N": named in errors
    export: str | None = None  # the export id the row carries; None: a sheet written before export ids
    shows: tuple[str, str] | None = None  # (query text, prediction) as the row shows them


def short(text: object) -> str:
    shown = repr(text)
    return shown if len(shown) <= 50 else shown[:47] + "..."


def check_export(ratings: list[Rating], path: Path, manifest: dict, source: str) -> None:
    """Every row of the file `path` is of the manifest's export (`source` names the manifest in messages): its
    export id is the manifest's, and it shows the query and prediction of the manifest's item of its id."""
    from medprobe.review.sheets import EXPORT_COLUMN

    expected = manifest.get("export_id")
    for rating in ratings:
        if expected is None and rating.export is not None:
            raise UserError(
                f"{path}: a sheet of export {rating.export}, but {source} has no export id (written before export "
                "ids): import the sheet with the folder its export wrote"
            )
        if expected is None:
            continue  # an export written before export ids: rows are matched by what they show (check_rows)
        if rating.export is None:  # a Label Studio task (a CSV without the column is refused by read_csv)
            raise UserError(
                f"{rating.where}: no data.{EXPORT_COLUMN} (tasks of an export written before export ids), so it cannot be of "
                f"export {expected} ({source}): import it with the folder its export wrote"
            )
        if not rating.export:
            raise UserError(
                f"{rating.where}: the {EXPORT_COLUMN} cell is empty; the exported sheet has {expected} there ({source})"
            )
        if rating.export != expected:
            raise UserError(
                f"{rating.where}: a sheet of export {rating.export}, but {source} is export {expected}; "
                "import it with the folder its export wrote"
            )
    check_rows(ratings, manifest, source)


def manifest_rows(manifest: dict, source: str) -> dict[str, tuple[str, str, str | None]]:
    """item -> (query text, prediction, the digest the manifest pins, None when it predates row digests); a
    manifest whose digest does not match its own item was edited after the export and is refused."""
    from medprobe.review.sheets import row_digest

    texts = {query["query"]: query.get("text") or "" for query in manifest["queries"]}
    rows = {}
    for item in manifest["items"]:
        query, prediction, digest = texts.get(item["query"], ""), item["prediction"], item.get("digest")
        if digest is not None and digest != row_digest(query, prediction, item["rank"]):
            raise UserError(
                f"{source}, item {item['item']}: its digest is not that of its query, prediction and rank (the manifest "
                "was edited after the export); use the manifest the export wrote, or export again"
            )
        rows[item["item"]] = (query, prediction, digest)
    return rows


def check_rows(ratings: list[Rating], manifest: dict, source: str) -> None:
    """Each row shows what the manifest's item of its id asks: the digest of its own query and prediction cells
    (with the item's rank) is the item's, or, in an export written before row digests, its cells are the item's
    text. A row of another export's sheet (the same item ids, other queries) is refused, naming what differs."""
    from medprobe.review.sheets import row_digest

    rows = manifest_rows(manifest, source)
    ranks = {item["item"]: item["rank"] for item in manifest["items"]}
    name = f"export {manifest['export_id']} ({source})" if manifest.get("export_id") else source
    for rating in ratings:
        known = rows.get(rating.item)
        if known is None:
            continue  # an unknown item is reported by check_ratings
        if rating.shows is None:
            raise UserError(
                f"{rating.where} (item {rating.item}): no data.query and data.prediction, so it cannot be checked against "
                f"{name}; import the tasks `medprobe review export` wrote"
            )
        query, prediction, digest = known
        if digest is not None and row_digest(*rating.shows, ranks[rating.item]) == digest:
            continue
        shown = tuple(text.strip() for text in rating.shows)
        differs = [
            f"{field} {short(cell)} on the sheet, {short(asked.strip())} in the manifest"
            for field, cell, asked in zip(("query", "prediction"), shown, (query, prediction))
            if cell != asked.strip()
        ]
        if differs:
            raise UserError(
                f"{rating.where} (item {rating.item}) does not show what {name} asks there: {'; '.join(differs)}: a row of "
                "another export's sheet (its export cell rewritten?) or an edited row; import each sheet with the folder its "
                "export wrote"
            )


def read_manifest(folder: str | Path) -> dict:
    from medprobe.review.sheets import FORMAT

    path = check_local_path(str(folder), "", "give the folder `medprobe review export` wrote") / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{folder}: no manifest.json; give the folder `medprobe review export` wrote") from None
    except json.JSONDecodeError as err:
        raise UserError(f"{path} is not valid JSON ({err})") from None
    if manifest.get("format") != FORMAT:
        raise UserError(f"{path} is not a review manifest (format {manifest.get('format')!r}, expected {FORMAT!r})")
    return manifest


def rating_value(text: object, where: str) -> int:
    """A whole number on the scale; 5.0 (a spreadsheet's) is 5."""
    try:
        number = float(str(text).strip())
    except ValueError:
        number = float("nan")
    if not number.is_integer() or not LOWEST <= number <= HIGHEST:
        shown = str(text).strip()
        raise UserError(f"{where}: rating {shown!r} is not on the {LOWEST}-{HIGHEST} scale" if shown else f"{where}: no rating")
    return int(number)


def read_csv(path: Path, header: list[str], source: str = "manifest.json", export: str | None = None) -> list[Rating]:
    """The ratings of a filled sheet with `header` (the manifest's); a sheet without the export column given
    with an export that has an id (`export`) is refused, saying what to do."""
    from medprobe.review.sheets import EXPORT_COLUMN

    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text; save the sheet as CSV UTF-8") from None
    rows = list(csv.reader(text.splitlines()))
    found = [cell.strip() for cell in rows[0]] if rows else []
    if export is not None and found == [name for name in header if name != EXPORT_COLUMN]:
        raise UserError(
            f"{path}: no export column (a sheet of an export written before export ids, or the column was deleted), so it "
            f"cannot be of export {export} ({source}): import it with the folder its export wrote"
        )
    if not rows or found != header:
        found = ",".join(rows[0]) if rows else "nothing"
        raise UserError(f"{path}, row 1: the header is {found!r}, expected {','.join(header)!r} (the exported sheet's)")
    ratings = []
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line a spreadsheet left at the end
        where = f"{path}, row {number}"
        if len(row) != len(header):
            raise UserError(f"{where}: {len(row)} cells, expected {len(header)}")
        cells = dict(zip(header, row))
        value = rating_value(cells["rating"], f"{where} (item {cells['item']})")
        export_cell = cells[EXPORT_COLUMN].strip() if EXPORT_COLUMN in cells else None
        shows = (cells["query"], cells["prediction"])
        ratings.append(Rating(cells["rater"].strip(), cells["item"].strip(), value, where, export_cell, shows))
    return ratings


def annotation_value(annotation: dict, where: str) -> int:
    """The rating of one Label Studio annotation: its `rating` Choices (or any Choices/Rating result)."""
    results = [r for r in annotation.get("result") or [] if isinstance(r, dict) and isinstance(r.get("value"), dict)]
    results.sort(key=lambda r: r.get("from_name") != "rating")  # ours first
    for result in results:
        value = result["value"]
        if value.get("choices"):
            if len(value["choices"]) != 1:
                raise UserError(f"{where}: {len(value['choices'])} choices, expected one rating")
            return rating_value(value["choices"][0], where)
        if "rating" in value:
            return rating_value(value["rating"], where)
    raise UserError(f"{where}: the annotation holds no rating (value.choices or value.rating)")


def read_label_studio(path: Path) -> list[Rating]:
    try:
        tasks = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not a Label Studio JSON export ({err})") from None
    if not isinstance(tasks, list):
        raise UserError(f"{path}: not a Label Studio JSON export (expected a list of tasks)")
    ratings = []
    for number, task in enumerate(tasks, start=1):
        where = f"{path}, task {number}"
        data = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data, dict) or "item" not in data or "rater" not in data:
            raise UserError(f"{where}: no data.item and data.rater; import the tasks `medprobe review export` wrote")
        done = [a for a in task.get("annotations") or [] if isinstance(a, dict) and not a.get("was_cancelled")]
        if len(done) > 1:
            raise UserError(f"{where} (item {data['item']}): {len(done)} annotations; each rater rates an item once")
        export = str(data["export"]).strip() if data.get("export") is not None else None
        shows = (str(data["query"]), str(data["prediction"])) if "query" in data and "prediction" in data else None
        if export is None and shows is None:
            shows = ("", "")  # neither an export id nor what the task shows: matches nothing
        for annotation in done:
            value = annotation_value(annotation, f"{where} (item {data['item']})")
            ratings.append(Rating(str(data["rater"]), str(data["item"]), value, where, export, shows))
    return ratings


def read_ratings_file(path: str | Path, manifest: dict, source: str = "manifest.json") -> list[Rating]:
    """The ratings of one file, each row checked to be of the manifest's export (`source` names the manifest)."""
    path = check_local_path(str(path), "", "give a filled sheet (CSV) or a Label Studio export (JSON)")
    if not path.is_file():
        raise UserError(f"{path} is a folder, not a ratings file")
    if path.suffix.lower() == ".json":
        ratings = read_label_studio(path)
    elif path.suffix.lower() == ".csv":
        ratings = read_csv(path, manifest["csv_header"], source, manifest.get("export_id"))
    else:
        raise UserError(f"{path}: a ratings file is a filled sheet (.csv) or a Label Studio JSON export (.json)")
    check_export(ratings, path, manifest, source)
    return ratings


def check_ratings(ratings: list[Rating], manifest: dict, files: list[str]) -> dict[str, dict[str, int]]:
    """{rater: {item: rating}}, once every rating is known to fit the manifest and none is missing."""
    items = [item["item"] for item in manifest["items"]]
    known, raters = set(items), manifest["raters"]
    table: dict[str, dict[str, Rating]] = {rater: {} for rater in raters}
    for rating in ratings:
        if rating.item not in known:
            raise UserError(f"{rating.where}: item {rating.item!r} is not in the export's manifest")
        if rating.rater not in table:
            raise UserError(f"{rating.where}: rater {rating.rater!r} is not one of the export's ({', '.join(raters)})")
        first = table[rating.rater].get(rating.item)
        if first is not None:
            raise UserError(f"{rating.where}: item {rating.item} rated a second time by {rating.rater} (first at {first.where})")
        table[rating.rater][rating.item] = rating
    for rater in raters:
        missing = [item for item in items if item not in table[rater]]
        if missing:
            source = sorted({r.where.rsplit(", ", 1)[0] for r in table[rater].values()}) or files
            raise UserError(
                f"{', '.join(source)}: rater {rater} has no rating for {len(missing)} item(s), e.g. {missing[0]}; "
                "every rater rates every item once"
            )
    return {rater: {item: found.value for item, found in table[rater].items()} for rater in raters}


def read_all(folder: str | Path, paths: list[str]) -> tuple[dict, dict[str, dict[str, int]]]:
    """The manifest and every rater's ratings, or the first problem as one UserError."""
    manifest = read_manifest(folder)
    source = str(Path(folder) / "manifest.json")
    ratings = [rating for path in paths for rating in read_ratings_file(path, manifest, source)]
    return manifest, check_ratings(ratings, manifest, [str(p) for p in paths])
