"""The review record of `medprobe review import`: figures, tables, heatmap, and the line other commands show.

    record = review_record(folder, manifest, table, files, accept=5, resamples=1000, seed=0)
    markdown(record); heatmap_svg(record)
    import_ratings(folder, ratings_files, accept=5, out=None)   # all of it, written all or nothing

- acc@k of the sampled queries (k = 1, the run's cutoffs up to K, and K) under three answer keys:
  the UMLS gold answers, expert acceptance (a prediction is accepted when the median of its
  ratings is >= --accept), and either; each with n and a seeded 95% bootstrap interval over queries.
- the confusion matrix of rating x in-gold, every rater's every rating counted (MedLAMA's Figure 8).
- agreement between raters (medprobe.review.agreement).
- erratum candidates: predictions whose median rating is 5 but that are not gold answers, and gold
  answers whose median rating is <= 3.

The import writes OUT (default DIR/review.json), OUT's .md and .heatmap.svg, and replaces only files it
wrote: a review record (its `format`) and the markdown and heatmap whose sha256 that record holds
(`outputs`); anything else there (a user's file, a results JSON given as --out, a markdown edited by
hand) is refused unless `overwrite`.

A review of a run is shown by `medprobe compare` and `medprobe publish results` when it lies beside
the run's results JSON as `<stem>.review.json` (results.json -> results.review.json) and was made
from that very results JSON (same sha256).
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import median
from xml.sax.saxutils import escape

import numpy as np

from medprobe.digests import sha256_file
from medprobe.options import RESAMPLES_OPTION, SEED_OPTION, check_positive
from medprobe.review.agreement import agreement
from medprobe.review.scale import HIGHEST, LOWEST, SCALE
from medprobe.stats import Estimator, Outcomes, estimate, intervals

RECORD_FORMAT = "medprobe-review-record/1"
KEYS = {"gold": "UMLS gold answers", "expert": "expert acceptance", "gold_or_expert": "gold or expert"}


def cutoffs(manifest: dict) -> list[int]:
    """1, the run's acc@k cutoffs up to K (recorded in the manifest at export), and K."""
    top = manifest["top_k"]
    return sorted({1, top, *(k for k in manifest["run"].get("k", []) if k <= top)})


def item_medians(table: dict[str, dict[str, int]], items: list[dict]) -> dict[str, float]:
    return {item["item"]: float(median(table[rater][item["item"]] for rater in table)) for item in items}


def query_ranks(manifest: dict, accepted: dict[str, bool]) -> dict[str, list[float]]:
    """Per answer key, each sampled query's best rank among the predictions the key counts right (NaN: none)."""
    best: dict[str, dict[str, float]] = {key: {} for key in KEYS}
    for item in manifest["items"]:
        right = {"gold": item["in_gold"], "expert": accepted[item["item"]]}
        right["gold_or_expert"] = right["gold"] or right["expert"]
        for key, ok in right.items():
            if ok:
                current = best[key].get(item["query"], np.inf)
                best[key][item["query"]] = min(current, item["rank"])
    labels = [query["query"] for query in manifest["queries"]]
    return {key: [best[key].get(label, np.nan) for label in labels] for key in KEYS}


def accuracy(manifest: dict, accepted: dict[str, bool], resamples: int, seed: int) -> dict[str, dict]:
    labels = [query["query"] for query in manifest["queries"]]
    groups = [query["relation"] or "all" for query in manifest["queries"]]
    outcomes = Outcomes.build(labels, groups, query_ranks(manifest, accepted))
    result: dict[str, dict] = {}
    for key in KEYS:
        estimators = {
            f"acc@{k}": Estimator(lambda s, k=k, key=key: (s[key] <= k).mean(axis=-1), "query") for k in cutoffs(manifest)
        }
        found = intervals(outcomes, estimators, resamples=resamples, seed=seed)
        result[key] = {
            name: {"value": estimate(outcomes, estimator), **{f: found[name][f] for f in ("low", "high", "level", "n", "method")}}
            for name, estimator in estimators.items()
        }
    return result


def confusion(manifest: dict, table: dict[str, dict[str, int]]) -> dict:
    """Counts of every rating (rows HIGHEST..LOWEST) by whether the prediction is a gold answer (columns)."""
    counts = {value: [0, 0] for value in range(HIGHEST, LOWEST - 1, -1)}
    for item in manifest["items"]:
        for rater in table:
            counts[table[rater][item["item"]]][0 if item["in_gold"] else 1] += 1
    return {"rows": list(counts), "columns": ["in gold", "not in gold"], "counts": list(counts.values())}


def erratum(manifest: dict, medians: dict[str, float], table: dict[str, dict[str, int]]) -> dict[str, list[dict]]:
    queries = {query["query"]: query for query in manifest["queries"]}

    def entry(item: dict) -> dict:
        query = queries[item["query"]]
        return {
            "id": query["id"],
            "query": query["text"],
            "relation": query["relation"],
            "prediction": item["prediction"],
            "rank": item["rank"],
            "gold": query["gold"],
            "ratings": {rater: table[rater][item["item"]] for rater in table},
        }

    items = manifest["items"]
    return {
        "rated_5_not_in_gold": [entry(i) for i in items if not i["in_gold"] and medians[i["item"]] >= HIGHEST],
        "gold_rated_at_most_3": [entry(i) for i in items if i["in_gold"] and medians[i["item"]] <= 3],
    }


def review_record(
    folder: str | Path, manifest: dict, table: dict[str, dict[str, int]], files: list[str], accept: int, resamples: int, seed: int
) -> dict:
    medians = item_medians(table, manifest["items"])
    accepted = {item: value >= accept for item, value in medians.items()}
    return {
        "format": RECORD_FORMAT,
        "export": {
            "folder": str(Path(folder).resolve()),
            "manifest_sha256": sha256_file(Path(folder) / "manifest.json"),
            "id": manifest.get("export_id"),  # None: exported before export ids (sheets matched by their text)
        },
        "run": manifest["run"],
        "ratings": [{"file": str(Path(f).resolve()), "sha256": sha256_file(f)} for f in files],
        "raters": list(table),
        "queries": len(manifest["queries"]),
        "top_k": manifest["top_k"],
        "show_gold": manifest["show_gold"],
        "accept": accept,
        "acceptance": f"a prediction is accepted when the median of its {len(table)} rating(s) is >= {accept}",
        "scale": manifest["scale"],
        "acc": accuracy(manifest, accepted, resamples, seed),
        "confusion": confusion(manifest, table),
        "agreement": agreement(table, [item["item"] for item in manifest["items"]], resamples, seed),
        "erratum": erratum(manifest, medians, table),
        "resamples": resamples,
        "seed": seed,
    }


# --- text -----------------------------------------------------------------------------------------------


def pct(found: dict) -> str:
    text = f"{100 * found['value']:.1f}"
    if found.get("low") is not None:
        text += f" [{100 * found['low']:.1f}, {100 * found['high']:.1f}]"
    return text


def agreement_text(found: dict | None) -> str:
    if not found:
        return "one rater: no agreement to measure"
    if found["value"] is None:
        return f"{found['coefficient']}: undefined (every rating the same)"
    interval = f" [{found['low']:.2f}, {found['high']:.2f}]" if found["low"] is not None else ""
    return f"{found['coefficient']} {found['value']:.2f}{interval} over {found['n']} rated predictions"


def summary_line(record: dict) -> str:
    """One line: the largest k's acc under the three keys, and agreement."""
    top = f"acc@{record['top_k']}"
    figures = "; ".join(f"{KEYS[key]} {pct(record['acc'][key][top])}" for key in KEYS)
    return (
        f"expert review ({record['queries']} queries, {len(record['raters'])} rater(s), accept >= {record['accept']}): "
        f"{top} (%, 95% interval) {figures}; {agreement_text(record['agreement'])}"
    )


def erratum_lines(entries: list[dict]) -> list[str]:
    if not entries:
        return ["none", ""]
    lines = ["| query | prediction | rank | gold answers | ratings |", "|---|---|---:|---|---|"]
    for e in entries:
        cells = [
            e["query"],
            e["prediction"],
            str(e["rank"]),
            "; ".join(e["gold"]),
            ", ".join(f"{r}: {v}" for r, v in e["ratings"].items()),
        ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines + [""]


def markdown(record: dict) -> str:
    run = record["run"]
    lines = [
        "# Expert review",
        "",
        f"Run: {run['benchmark']}/{run['config'] or 'all'} {run['split']}, prober {run['prober']}, model {run['model']} "
        f"(results sha256 `{run['sha256'][:12]}`). {record['queries']} queries, top {record['top_k']} predictions each, "
        f"rated by {', '.join(record['raters'])} on the 1-5 scale"
        + (" (gold shown)" if record["show_gold"] else " (blinded)")
        + ".",
        f"Expert acceptance: {record['acceptance']}.",
        "",
        "## acc@k (%, 95% bootstrap interval over queries)",
        "",
        "| answer key | " + " | ".join(record["acc"]["gold"]) + " | n |",
        "|---|" + "---:|" * (len(record["acc"]["gold"]) + 1),
    ]
    for key, label in KEYS.items():
        found = record["acc"][key]
        lines.append(f"| {label} | " + " | ".join(pct(v) for v in found.values()) + f" | {next(iter(found.values()))['n']} |")
    matrix = record["confusion"]
    lines += ["", "## Rating x in gold (every rating)", "", "| rating | in gold | not in gold |", "|---|---:|---:|"]
    lines += [f"| {value}: {SCALE[value]} | {a} | {b} |" for value, (a, b) in zip(matrix["rows"], matrix["counts"])]
    lines += ["", "## Agreement", "", agreement_text(record["agreement"]), ""]
    lines += ["## Erratum candidates", "", "Predictions rated 5 (median) that are not UMLS gold answers:", ""]
    lines += erratum_lines(record["erratum"]["rated_5_not_in_gold"])
    lines += ["Gold answers rated 3 or lower (median):", ""]
    lines += erratum_lines(record["erratum"]["gold_rated_at_most_3"])
    return "\n".join(lines)


def heatmap_svg(record: dict) -> str:
    """The rating x in-gold matrix as an SVG heatmap; each column shaded by its share of that column's ratings."""
    matrix = record["confusion"]
    cell_w, cell_h, left, top = 120, 36, 70, 40
    totals = [sum(row[c] for row in matrix["counts"]) or 1 for c in range(2)]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + 2 * cell_w + 10}" height="{top + 5 * cell_h + 30}" '
        'font-family="sans-serif" font-size="13">',
        f'<text x="{left}" y="18">rating x in gold ({sum(sum(r) for r in matrix["counts"])} ratings)</text>',
    ]
    for c, name in enumerate(matrix["columns"]):
        parts.append(f'<text x="{left + c * cell_w + cell_w / 2}" y="{top - 6}" text-anchor="middle">{escape(name)}</text>')
    for r, (value, row) in enumerate(zip(matrix["rows"], matrix["counts"])):
        y = top + r * cell_h
        parts.append(f'<text x="{left - 10}" y="{y + cell_h / 2 + 5}" text-anchor="end">{value}</text>')
        for c, count in enumerate(row):
            share = count / totals[c]
            shade = int(255 - 200 * share)
            fill = f"rgb({shade},{shade},255)"
            ink = "white" if share > 0.6 else "black"
            x = left + c * cell_w
            parts.append(f'<rect x="{x}" y="{y}" width="{cell_w}" height="{cell_h}" fill="{fill}" stroke="white"/>')
            parts.append(
                f'<text x="{x + cell_w / 2}" y="{y + cell_h / 2 + 5}" text-anchor="middle" fill="{ink}">{count} ({100 * share:.0f}%)</text>'
            )
    parts.append(f'<text x="{left}" y="{top + 5 * cell_h + 20}">shade: share of the column\'s ratings</text>')
    return "\n".join(parts + ["</svg>"]) + "\n"


# --- beside a run: what compare and publish show ----------------------------------------------------------


def review_path(results: str | Path) -> Path:
    """results.json -> results.review.json beside it."""
    results = Path(results)
    return results.with_name(f"{results.stem}.review.json")


def review_line(results: str | Path) -> str | None:
    """The summary line of the review beside a results JSON, or None when there is none; a review of
    another version of the run (the results JSON's sha256 differs) says so instead of its figures."""
    path = review_path(results)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("format") != RECORD_FORMAT:
            return None
        current = sha256_file(results)
        if record["run"]["sha256"] != current:
            return f"{path.name} reviews another version of {Path(results).name} (its sha256 differs); its figures are not shown"
        return summary_line(record)
    except (OSError, ValueError, KeyError, TypeError):
        return f"{path.name} could not be read as a review record; not shown"


# --- the command ----------------------------------------------------------------------------------------


def check_ours(target: Path, md: Path, svg: Path) -> None:
    """The files at OUT, its .md and .heatmap.svg are absent or the ones a review import wrote there: OUT a review
    record, the others those whose sha256 it holds (a record written before it held them: their text regenerated)."""
    from medprobe.contracts import UserError
    from medprobe.digests import sha256_text

    advice = "the import would replace it: pass --overwrite to replace it, or choose another --out"
    record = None
    if target.is_file():
        try:
            record = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            record = None
        if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
            raise UserError(f"--out {target}: a file `medprobe review import` did not write (not a review record); {advice}")
    for path, role, write in ((md, "markdown", lambda r: markdown(r) + "\n"), (svg, "heatmap", heatmap_svg)):
        if not path.is_file():
            continue
        if record is None:
            raise UserError(
                f"{path}: a file `medprobe review import` did not write (no review record {target.name} beside it); {advice}"
            )
        expected = (record.get("outputs") or {}).get(role)
        if expected is None:  # a record from before `outputs`: what it would have written
            try:
                expected = sha256_text(write(record))
            except (KeyError, TypeError, ValueError, IndexError, AttributeError):
                expected = None
        if sha256_file(path) != expected:
            raise UserError(
                f"{path}: not the {role} `medprobe review import` wrote beside {target.name} (edited since?); {advice}"
            )


def import_ratings(
    folder: str | Path,
    files: list[str],
    *,
    accept: int = HIGHEST,
    out: str | Path | None = None,
    resamples: int = RESAMPLES_OPTION.default,
    seed: int = SEED_OPTION.default,
    overwrite: bool = False,
) -> dict:
    """Check the outputs and every ratings file, then write OUT (default DIR/review.json), OUT's .md and
    .heatmap.svg together (all or nothing). Nothing is written when any file has a problem; a file there that
    the import did not write is replaced only with `overwrite`."""
    from medprobe.atomic import check_distinct_outputs, check_replaceable, check_writable, write_all_atomically
    from medprobe.contracts import UserError
    from medprobe.digests import sha256_text
    from medprobe.review.ratings import read_all

    if not LOWEST <= accept <= HIGHEST:
        raise UserError(f"--accept must be on the {LOWEST}-{HIGHEST} scale, got {accept}")
    check_positive(RESAMPLES_OPTION, resamples)
    target = Path(out) if out else Path(folder) / "review.json"
    md, svg = target.with_suffix(".md"), target.with_name(f"{target.stem}.heatmap.svg")
    if target.is_dir():
        raise UserError(f"--out {target} is a folder; give a file path, e.g. {target / 'review.json'}")
    check_writable(target, "--out")
    for path, option in ((target, "--out"), (md, "the markdown"), (svg, "the heatmap")):
        if path.is_dir():  # --out itself is check_writable's
            raise UserError(f"{path} ({option} beside --out) is a folder; choose another --out")
        check_replaceable(path, option)
    check_distinct_outputs({"--out": target, "the markdown": md, "the heatmap": svg, **{f"ratings {f}": f for f in files}})
    if not overwrite:
        check_ours(target, md, svg)
    manifest, table = read_all(folder, files)
    record = review_record(folder, manifest, table, files, accept, resamples, seed)
    md_text, svg_text = markdown(record) + "\n", heatmap_svg(record)
    record["outputs"] = {"markdown": sha256_text(md_text), "heatmap": sha256_text(svg_text)}  # what a later import may replace
    text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    writers = [
        (target, lambda temp: temp.write_text(text, encoding="utf-8")),
        (md, lambda temp: temp.write_text(md_text, encoding="utf-8")),
        (svg, lambda temp: temp.write_text(svg_text, encoding="utf-8")),
    ]
    for path in write_all_atomically(writers):
        print(f"wrote {path}")
    if manifest.get("export_id") is None:
        print(
            f"note: {folder} was exported before export ids; its sheets were matched to the manifest by query and prediction text"
        )
    elif any("digest" not in item for item in manifest["items"]):
        print(
            f"note: {folder} was exported before row digests; each row was checked against the manifest's query and "
            "prediction text instead"
        )
    return record
