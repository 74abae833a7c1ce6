"""Every figure the docs quote from a run, made by running it: writes docs/figures.json and docs/leaderboard.png.

    python scripts/docs_figures.py                         # builds the MedLAMA release from ../shared/data
    python scripts/docs_figures.py --dataset /tmp/medlama  # a built MedLAMA folder
    python scripts/docs_figures.py --only sample           # the shipped sample's figures alone (seconds)
    python scripts/docs_figures.py --only knowledge        # docs/knowledge.md's facets (MiniLM, SmolLM2 on a subset)

Each figure is the exact text a page holds (`page`, `text`), made from the runs' records; tests/test_docs_figures.py
checks that every page holds its text, re-runs the sample's figures, and, where the release is present, checks that
the MedLAMA figures were measured on the data and the model weights that are there now. The runs are made as a
user makes them, `medprobe probe` and `medprobe compare` in subprocesses, with an embedding cache of their own
(the first run is cold), in the order below:

- the shipped sample (`medprobe.sample("medlama")`), hard, MiniLM: docs/compare.md's interval block and
  verification message, docs/troubleshooting.md, README.md;
- MedLAMA (the release's hard and full, MiniLM contrastive, untuned): full; full with --exclude-head; hard; hard
  with --layers 5; `medprobe compare` of the two hard runs: docs/compare.md and docs/reproducing.md;
- docs/knowledge.md ("Is it knowledge?"): the validity facets of MiniLM contrastive on MedLAMA hard (all of it, with
  --variants templates and --shuffled-control) and of SmolLM2 causal-lm on a subset of hard (--per-relation
  KNOWLEDGE_PER_RELATION, --candidates relation, with --memorisation: the whole of hard is hours on 2 cores, and
  the set's whole answer space minutes a query);
- docs/leaderboard.png: the runs of docs/leaderboard.md's commands (the sample's two MiniLM runs, MST
  comparison on a small build with MiniLM and its random-weight twin), `medprobe leaderboard`, a screenshot in
  headless Chromium (1280 x 1060), reduced to 128 colours.

Not made here (the pages label them as measured on a named machine, or as someone else's): timings; the
bfloat16/float32 comparison of docs/scaling.md (scripts/bench_dtype.py); the papers' figures; the rewired rows and
the MST table of docs/reproducing.md (20-40 min a run); README's demo table (`medprobe demo` prints it); the
SmolLM2 lm-eval accuracies of docs/lm_eval.md (needs lm-evaluation-harness); docs/leaderboard.md's power table
(scripts/leaderboard_power.py); the machine comparison of docs/probers/contrastive.md ("When rounding ranks").

How long each part took, and on what machine: docs/figures.json's `seconds` and `machine`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "docs" / "figures.json"
PICTURE = REPO / "docs" / "leaderboard.png"
RELEASE = REPO.parent / "shared" / "data" / "medlama"
sys.path.insert(0, str(REPO))  # this checkout's medprobe, as the runs' subprocesses get (PYTHONPATH below)
LAYERS = (
    5  # the docs' layer-wise example: MiniLM's first 1-4 layers leave many rankings to rounding (docs/probers/contrastive.md)
)


KNOWLEDGE_PER_RELATION = 2  # SmolLM2's subset of MedLAMA hard: the first N queries of each of its 19 relations


def medprobe(*args: str, env: dict) -> str:
    """`medprobe ARGS` as a user runs it; its printed output (a failure stops the script with it)."""
    done = subprocess.run([sys.executable, "-m", "medprobe", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"medprobe {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def probe(dataset: str, config: str, out: Path, env: dict, *options: str) -> tuple[dict, str]:
    """A MiniLM contrastive run; its record (as written) and what it printed."""
    args = ["probe", "--prober", "contrastive", "--dataset", dataset, "--config", config, "--model", "minilm", "--quiet"]
    printed = medprobe(*args, *options, "--out", str(out), env=env)
    return json.loads(out.read_text(encoding="utf-8")), printed


def pct(value: float) -> str:
    return f"{100 * value:.2f}"


def m(record: dict, metric: str) -> str:
    """A metric as the tables print it (%, two decimals)."""
    return pct(record["metrics"][metric])


def interval(record: dict, metric: str) -> str:
    low, high = record["intervals"][metric]["low"], record["intervals"][metric]["high"]
    return f"{pct(record['metrics'][metric])} [{pct(low)}, {pct(high)}]"


def figure(key: str, page: str, text: str, run: str) -> dict:
    return {"id": key, "page": page, "text": text, "from": run}


def sample_figures(work: Path, env: dict) -> tuple[list[dict], dict]:
    """The shipped sample's hard config, MiniLM with all layers: the figures of compare, troubleshooting and README."""
    import medprobe as package

    record, printed = probe(package.sample("medlama"), "hard", work / "sample_all.json", env)
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("95% intervals"))
    block = "\n".join(lines[start : start + 5])
    acc10 = record["metrics"]["acc@10"]
    n = record["intervals"]["acc@10"]["n"]
    line = f"acc@10  {interval(record, 'acc@10')}  chance {pct(record['chance']['acc@10']['value'])}"
    figures = [
        figure("sample-intervals", "docs/compare.md", block, "sample_all"),
        figure("sample-verify", "docs/compare.md", f"but {acc10:.4f} from its {n} per-item outcomes", "sample_all"),
        figure(
            "sample-verify-troubleshooting",
            "docs/troubleshooting.md",
            f"but {acc10:.4f} from its per-item outcomes",
            "sample_all",
        ),
        figure("sample-interval-line", "README.md", line, "sample_all"),
    ]
    return figures, {"sample_all": run_facts(record, work)}


def run_facts(record: dict, work: Path) -> dict:
    """What a figure was measured on: the command (paths relative to the checkout or the script's work folder), the
    data and weights digests, the queries whose top k rounding picked, medprobe and the libraries."""
    return {
        "command": record["command"].replace(str(REPO) + "/", "").replace(str(work) + "/", ""),
        "data_sha256": record["data_fingerprint"].get("sha256"),
        "weights_sha256": record["model_identity"].get("weights_sha256"),
        "queries_ranked_below_float32_resolution": record["timings"].get("queries_ranked_below_float32_resolution"),
        "versions": {name: record["versions"].get(name) for name in ("medprobe", "torch", "transformers")},
    }


def medlama_figures(dataset: str, work: Path, env: dict) -> tuple[list[dict], dict]:
    """MedLAMA full and hard, MiniLM untuned: docs/reproducing.md's table and docs/compare.md's comparison."""
    full, _ = probe(dataset, "full", work / "full.json", env)
    full_head, _ = probe(dataset, "full", work / "full_exclude_head.json", env, "--exclude-head")
    hard, _ = probe(dataset, "hard", work / "hard.json", env)
    hard_layers, _ = probe(dataset, "hard", work / f"hard_layers{LAYERS}.json", env, "--layers", str(LAYERS))
    medprobe("compare", str(work / "hard.json"), str(work / f"hard_layers{LAYERS}.json"), "--out", str(work / "compare"), env=env)
    compared = json.loads((work / "compare" / "compare.json").read_text(encoding="utf-8"))["comparisons"][0]
    diff = compared["differences"]["acc@10"]
    p = diff["p_value"]
    p_text = "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
    sentence = (
        f"On MedLAMA hard ({hard['subset']['items']:,} queries), MiniLM with all layers against `--layers {LAYERS}`: acc@10 "
        f"{interval(hard, 'acc@10')} vs {interval(hard_layers, 'acc@10')}, difference {100 * diff['difference']:+.2f} points "
        f"[{100 * diff['low']:+.2f}, {100 * diff['high']:+.2f}], {p_text} ({diff['test']}, {diff['better']} vs "
        f"{diff['worse']} discordant queries)."
    )
    figures = [
        figure("medlama-hard-layers", "docs/compare.md", sentence, f"hard, hard_layers{LAYERS}"),
        figure(
            "medlama-full-untuned", "docs/reproducing.md", f"| full, untuned | {m(full, 'acc@1')} / {m(full, 'acc@10')} |", "full"
        ),
        figure(
            "medlama-hard-untuned",
            "docs/reproducing.md",
            f"| hard, untuned | {m(hard, 'acc@1')} / {m(hard, 'acc@10')}; macro {m(hard, 'macro_acc@1')} / {m(hard, 'macro_acc@10')} |",
            "hard",
        ),
        figure(
            "medlama-full-exclude-head",
            "docs/reproducing.md",
            f"acc@1 on full is {m(full_head, 'acc@1')} untuned",
            "full_exclude_head",
        ),
    ]
    runs = {"full": full, "full_exclude_head": full_head, "hard": hard, f"hard_layers{LAYERS}": hard_layers}
    return figures, {name: run_facts(record, work) for name, record in runs.items()}


KNOWLEDGE_FACETS = (  # (metric, what it is), in the order docs/knowledge.md's tables give them
    ("acc@10", "acc@10 (headline)"),
    ("control_acc@10", "control acc@10 (subject replaced by a placeholder)"),
    ("above_bias@10", "knowledge above prompt bias @10"),
    ("answerable_from_template@10", "answerable from the template alone @10 (items)"),
    ("shuffled_acc@10", "shuffled-subject acc@10"),
    ("above_shuffled@10", "above the shuffled subject @10"),
    ("consistency@10", "consistency@10 (both templates)"),
    ("consistency_top1", "same top-1 under both templates"),
    ("robust_acc@10", "robust acc@10 (right under both templates)"),
    ("aurc", "AURC (top-1 errors by margin; lower is better)"),
    ("aurc_oracle", "AURC, oracle"),
    ("aurc_random", "AURC, random"),
    ("ece", "ECE (10 equal-mass bins)"),
    ("brier", "Brier score"),
    ("mink_low_acc@10", "acc@10, lowest Min-K%++ third"),
    ("mink_high_acc@10", "acc@10, highest Min-K%++ third"),
    ("mink_high_minus_low@10", "acc@10 high minus low third"),
)


def facet_value(record: dict, metric: str) -> tuple[str, str, str]:
    """(value, 95% interval, clustered interval) of a metric as docs/knowledge.md prints it: shares in %, counts
    whole, scores (AURC, ECE, Brier) to four decimals; "—" for an interval the record lacks."""
    found = record["intervals"].get(metric) or {}
    scale = found.get("scale", "score" if metric.startswith(("aurc", "ece", "brier")) else "")

    def text(value: float | None) -> str:
        if value is None:
            return "—"
        return f"{value:,.0f}" if scale == "count" else f"{value:.4f}" if scale == "score" else pct(value)

    def span(entry: dict) -> str:
        return f"[{text(entry['low'])}, {text(entry['high'])}]" if entry.get("low") is not None else "—"

    return text(record["metrics"][metric]), span(found), span(found.get("clustered") or {})


def facet_table(record: dict) -> str:
    """The markdown table of a run's facets (those it has), with the design effect of each clustered interval."""
    lines = ["| facet | value | 95% interval | clustered (subjects) | deff |", "|---|---:|---:|---:|---:|"]
    for metric, label in KNOWLEDGE_FACETS:
        if metric not in record["metrics"]:
            continue
        value, item_level, clustered = facet_value(record, metric)
        effect = ((record["intervals"].get(metric) or {}).get("clustered") or {}).get("design_effect")
        lines.append(f"| {label} | {value} | {item_level} | {clustered} | {'—' if effect is None else f'{effect:.2f}'} |")
    return "\n".join(lines)


def knowledge_figures(dataset: str, work: Path, env: dict) -> tuple[list[dict], dict]:
    """docs/knowledge.md: MiniLM contrastive on all of MedLAMA hard and SmolLM2 causal-lm on a subset of it, every
    facet the model allows: MiniLM with both templates, the control and the shuffled subject; SmolLM2 (a subset, each
    query against its relation's answers) with the control, its probabilities' calibration and Min-K%++."""
    minilm, _ = probe(dataset, "hard", work / "knowledge_minilm.json", env, "--variants", "templates", "--shuffled-control")
    args = ["probe", "--prober", "causal-lm", "--dataset", dataset, "--config", "hard", "--model", "smollm2", "--quiet"]
    args += ["--per-relation", str(KNOWLEDGE_PER_RELATION), "--candidates", "relation", "--memorisation"]
    medprobe(*args, "--out", str(work / "knowledge_smollm2.json"), env=env)
    smollm2 = json.loads((work / "knowledge_smollm2.json").read_text(encoding="utf-8"))
    clusters = minilm["intervals"]["acc@10"]["clustered"]["clusters"]
    figures = [
        figure("knowledge-minilm-table", "docs/knowledge.md", facet_table(minilm), "knowledge_minilm"),
        figure("knowledge-smollm2-table", "docs/knowledge.md", facet_table(smollm2), "knowledge_smollm2"),
        figure(
            "knowledge-minilm-size",
            "docs/knowledge.md",
            f"MiniLM on all of MedLAMA hard: {minilm['subset']['items']:,} queries of {clusters:,} subjects",
            "knowledge_minilm",
        ),
        figure(
            "knowledge-smollm2-size",
            "docs/knowledge.md",
            f"SmolLM2 on a subset of MedLAMA hard (`--per-relation {KNOWLEDGE_PER_RELATION} --candidates relation`): "
            f"{smollm2['subset']['items']:,} queries",
            "knowledge_smollm2",
        ),
    ]
    return figures, {"knowledge_minilm": run_facts(minilm, work), "knowledge_smollm2": run_facts(smollm2, work)}


def built_medlama(dataset: str | None, work: Path, env: dict) -> str:
    if dataset:
        return dataset
    if not RELEASE.is_dir():
        sys.exit(f"no MedLAMA release at {RELEASE}: give a built MedLAMA with --dataset, or --only sample")
    medprobe("build", "medlama", "--data-dir", str(RELEASE), "--out", str(work / "medlama"), env=env)
    return str(work / "medlama")


def picture(work: Path, env: dict) -> None:
    """docs/leaderboard.png from the runs of docs/leaderboard.md's commands, as its last paragraph says."""
    from PIL import Image

    import medprobe as package
    from medprobe.atomic import atomic_output

    runs, sample = work / "board_runs", package.sample("medlama")
    runs.mkdir()
    probe(sample, "hard", runs / "minilm.json", env)
    probe(sample, "hard", runs / f"minilm-layers{LAYERS}.json", env, "--layers", str(LAYERS))
    sizes = ["--set", "train_size=200", "--set", "validation_size=20", "--set", "test_size=100"]
    medprobe("build", "mst", "--out", str(work / "mst"), *sizes, env=env)
    head = ["probe", "--prober", "mlm-head", "--dataset", str(work / "mst"), "--config", "comparison", "--model", "minilm"]
    head += ["--seeds", "1", "--epochs", "1", "--quiet"]
    medprobe(*head, "--out", str(runs / "mst-minilm.json"), env=env)
    medprobe(*head, "--scratch", "--out", str(runs / "mst-scratch.json"), env=env)
    sources = sorted(str(path) for path in runs.glob("*.json"))
    medprobe("leaderboard", *sources, "--include-samples", "--out", str(work / "site"), env=env)
    shot = work / "leaderboard.png"
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    if chromium is None:
        sys.exit("headless Chromium is needed for docs/leaderboard.png (apt-get install -y chromium)")
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,1060"]
    subprocess.run([*command, f"--screenshot={shot}", (work / "site" / "index.html").as_uri()], capture_output=True, check=True)
    with atomic_output(PICTURE) as temp:
        Image.open(shot).convert("RGB").quantize(colors=128).save(temp, format="PNG", optimize=True)


def machine() -> dict:
    import torch
    import transformers

    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in line), ""
    )
    return {
        "cpu": cpu or platform.processor(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    from medprobe.atomic import write_text_atomically

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", help="a built MedLAMA folder (default: build the release in ../shared/data/medlama)")
    parser.add_argument(
        "--only", choices=("sample", "medlama", "knowledge", "picture"), help="make only these figures (the file keeps the rest)"
    )
    parser.add_argument("--work", help="keep the runs in this folder (default: a temporary one)")
    args = parser.parse_args(argv)
    parts = [args.only] if args.only else ["sample", "medlama", "knowledge", "picture"]
    old = json.loads(FIGURES.read_text(encoding="utf-8")) if FIGURES.is_file() else {}
    figures, runs, seconds = [], {}, {}
    with tempfile.TemporaryDirectory(prefix="docs-figures-") as scratch:
        work = Path(args.work or scratch)
        work.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "MEDPROBE_EMBEDDING_CACHE": str(work / "embedding-cache"), "PYTHONPATH": str(REPO)}
        for part in parts:
            started = time.perf_counter()
            if part == "sample":
                made, facts = sample_figures(work, env)
            elif part == "medlama":
                made, facts = medlama_figures(built_medlama(args.dataset, work, env), work, env)
            elif part == "knowledge":
                made, facts = knowledge_figures(args.dataset or built_medlama(None, work, env), work, env)
            else:
                picture(work, env)
                made, facts = [], {}
            figures, runs = figures + made, {**runs, **facts}
            seconds[part] = round(time.perf_counter() - started, 1)
    made_ids = {item["id"] for item in figures}
    kept = [item for item in old.get("figures", []) if item["id"] not in made_ids]
    data = {
        "made_by": "python scripts/docs_figures.py (each part alone: --only sample, medlama, knowledge or picture)",
        "machine": machine(),
        "seconds": {**old.get("seconds", {}), **seconds},  # each part's wall time, when it was last made
        "figures": sorted([*kept, *figures], key=lambda item: (item["page"], item["id"])),
        "runs": dict(sorted({**old.get("runs", {}), **runs}.items())),
    }
    write_text_atomically(FIGURES, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    for item in figures:
        held = item["text"] in (REPO / item["page"]).read_text(encoding="utf-8")
        print(f"{'ok     ' if held else 'CHANGED'} {item['page']}: {item['text'].splitlines()[0]}")
    made = ", ".join(f"{part} {value} s" for part, value in seconds.items())
    picture_too = f" and {PICTURE.relative_to(REPO)}" if "picture" in parts else ""
    print(f"wrote {FIGURES.relative_to(REPO)}{picture_too} ({made})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
