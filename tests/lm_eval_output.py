"""An lm-evaluation-harness 0.4.13 output folder (`--output_path OUT --log_samples`), written the way lm-eval writes it
for the tasks `medprobe export lm-eval` wrote, without lm-eval or a model: for tests of `medprobe import lm-eval` and
for scripts/bench_lm_eval_import.py.

    results = write_output(out, export_folder, ["medprobe_mst"], scores=length_scores, limit=2)

The shape is copied from real runs (lm_eval 0.4.13, the hf backend, a tiny GPT-2 and SmolLM2 on MST and the shipped
MedLAMA sample): `OUT/<model, sanitised>/results_<time>.json` with lm-eval's keys, and one
`samples_<task>_<time>.jsonl` per task whose lines hold lm-eval's keys in its order, the log-likelihoods as strings.
The docs are the exported utils.py's own (its process_docs, doc_to_text, doc_to_choice and process_results run here
on the exported dataset), so they carry the stamps a real run logs; the log-likelihoods are `scores(doc, context,
continuations)`. tests/test_lm_eval_round_trip.py checks this shape against a real run where lm-eval is installed.
The end of the module holds what the tests of `medprobe import lm-eval` share.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

TIME = "2026-11-28T12-00-00.000000"
Scores = Callable[[dict, str, list[str]], list[float]]  # (doc, context, continuations) -> each one's log-likelihood


def length_scores(doc: dict, context: str, continuations: list[str]) -> list[float]:
    """Deterministic stand-in log-likelihoods: longer continuations are less likely, ties broken by their text."""
    return [-float(len(text)) - int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) / 65536 for text in continuations]


def load_utils(export: Path):
    spec = importlib.util.spec_from_file_location(f"lm_eval_utils_{abs(hash(str(export)))}", export / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def task_yamls(export: Path) -> dict[str, dict]:
    """Each exported task's own YAML fields (its `metadata` as JSON, `!function` tags as `utils.<name>`)."""
    found = {}
    for path in sorted(export.glob("medprobe_*.yaml")):
        fields = {}
        for line in path.read_text().splitlines():
            key, _, value = line.partition(": ")
            fields[key] = value.removeprefix("!function ") if value.startswith("!function ") else json.loads(value)
        found[fields["task"]] = {**fields, "config_source": f"{export.name}/{path.name}"}
    return found


def groups_of(export: Path) -> dict[str, tuple[list[str], bool]]:
    """group -> (its tasks, weight_by_size)."""
    found = {}
    for path in sorted(export.glob("_medprobe_*.yaml")):
        if path.name.endswith("_template_yaml"):
            continue
        text = path.read_text()
        group = re.search(r"^group: (\S+)$", text, re.M)[1]
        tasks = re.findall(r"^  - (medprobe_\S+)$", text, re.M)
        found[group] = (tasks, "weight_by_size: true" in text)
    return found


def docs_of(utils, task: dict):
    """The docs lm-eval evaluates for a task: the config's split through the task's process_docs."""
    import datasets

    datasets.disable_progress_bars()

    metadata = task["metadata"]["medprobe"]
    split = metadata["split"]
    data = datasets.load_dataset(metadata["dataset_path"], task["dataset_name"], split=split)
    return getattr(utils, task["process_docs"].removeprefix("utils."))(data)


def sample_line(doc_id: int, doc: dict, target: object, context: str, choices: list[str], lls: list[float], metrics: dict) -> str:
    """One samples line, keys in lm-eval's order, values serialised as lm-eval does (numbers in strings)."""
    sample = {
        "doc_id": doc_id,
        "doc": doc,
        "target": str(target),
        "arguments": {f"gen_args_{i}": {"arg_0": context, "arg_1": choice} for i, choice in enumerate(choices)},
        "resps": [[[str(ll), "False"]] for ll in lls],
        "filtered_resps": [[str(ll), "False"] for ll in lls],
        "filter": "none",
        "metrics": list(metrics),
        "doc_hash": hashlib.sha256(json.dumps(doc, indent=2, ensure_ascii=False).encode()).hexdigest(),
        "prompt_hash": hashlib.sha256(context.encode()).hexdigest(),
        "target_hash": hashlib.sha256(str(target).encode()).hexdigest(),
        **metrics,
    }
    return json.dumps(sample, ensure_ascii=False)


def scored_doc(utils, benchmark: str, doc: dict, scores: Scores) -> tuple[object, str, list[str], list[float], dict]:
    """(target, context, choices, log-likelihoods, per-doc metrics) of one doc, as lm-eval computes them."""
    if benchmark == "mst":
        context, choices = utils.mst_text(doc), utils.mst_choices(doc)
        lls = [float(ll) for ll in scores(doc, context, choices)]
        best = max(range(len(lls)), key=lambda i: (lls[i], -i))
        norm = [ll / len(choice.encode()) for ll, choice in zip(lls, choices)]
        best_norm = max(range(len(norm)), key=lambda i: (norm[i], -i))
        return (
            doc["label"],
            context,
            choices,
            lls,
            {"acc": float(best == doc["label"]), "acc_norm": float(best_norm == doc["label"])},
        )
    context, choices = utils.medlama_text(doc), utils.medlama_choices(doc)
    lls = [float(ll) for ll in scores(doc, context, choices)]
    return utils.medlama_target(doc), context, choices, lls, utils.medlama_results(doc, [(ll, False) for ll in lls])


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def write_output(
    out: Path,
    export: Path,
    tasks: list[str],
    *,
    scores: Scores = length_scores,
    limit: int | None = None,
    model: str = "tiny-model",
    time: str = TIME,
) -> Path:
    """lm-eval's output folder for a run of `tasks` (tasks or groups of the export at `export`); returns the results
    JSON. `limit`: lm_eval --limit (the first N docs of each task)."""
    utils = load_utils(export)
    yamls, groups = task_yamls(export), groups_of(export)
    leaves = [task for name in tasks for task in (groups[name][0] if name in groups else [name])]
    folder = out / re.sub(r"[^\w.-]", "__", model)
    folder.mkdir(parents=True, exist_ok=True)
    results, configs, n_samples, per_task = {}, {}, {}, {}
    for task in leaves:
        config = yamls[task]
        benchmark = config["metadata"]["medprobe"]["benchmark"]
        docs = docs_of(utils, config)
        total = docs.num_rows
        kept = min(total, limit) if limit is not None else total
        lines, values = [], {}
        for doc_id in range(kept):
            doc = docs[doc_id]
            target, context, choices, lls, metrics = scored_doc(utils, benchmark, doc, scores)
            lines.append(sample_line(doc_id, doc, target, context, choices, lls, metrics))
            for name, value in metrics.items():
                values.setdefault(name, []).append(value)
        (folder / f"samples_{task}_{time}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        per_task[task] = {name: mean(found) for name, found in values.items()}
        results[task] = {"name": task, "alias": task, "sample_len": kept}
        for name, value in per_task[task].items():
            results[task][f"{name},none"] = value
            results[task][f"{name}_stderr,none"] = math.sqrt(value * (1 - value) / max(kept - 1, 1))
        n_samples[task] = {"original": total, "effective": kept}
        metadata = {**config["metadata"], "pretrained": model, "config_source": config["config_source"]}
        configs[task] = {"task": task, "dataset_path": config["metadata"]["medprobe"]["dataset_path"], "metadata": metadata}
    run_groups = {}
    for name in tasks:
        if name not in groups:
            continue
        members, by_size = groups[name]
        sizes = [n_samples[task]["effective"] if by_size else 1 for task in members]
        entry = {"alias": name, "name": name, "sample_len": sum(n_samples[t]["effective"] for t in members)}
        for metric in per_task[members[0]]:
            entry[f"{metric},none"] = sum(per_task[t][metric] * s for t, s in zip(members, sizes)) / sum(sizes)
        run_groups[name] = results[name] = entry
    document = {
        "results": results,
        "groups": run_groups,
        "group_subtasks": {name: groups[name][0] for name in tasks if name in groups},
        "configs": configs,
        "versions": {task: 1.0 for task in leaves},
        "n-shot": {task: 0 for task in leaves},
        "higher_is_better": {},
        "n-samples": n_samples,
        "config": {
            "model": "hf",
            "model_args": {"pretrained": model},
            "model_num_parameters": 43904,
            "model_dtype": "torch.float32",
            "model_revision": "main",
            "model_sha": "",
            "batch_size": "8",
            "batch_sizes": [],
            "device": "cpu",
            "use_cache": None,
            "limit": float(limit) if limit is not None else None,
            "bootstrap_iters": 100000,
            "gen_kwargs": {},
            "random_seed": 0,
            "numpy_seed": 1234,
            "torch_seed": 1234,
            "fewshot_seed": 1234,
        },
        "git_hash": None,
        "date": 1795905058.9,
        "pretty_env_info": "PyTorch version: 2.13.0+cpu\nIs debug build: False",
        "transformers_version": "5.24.0",
        "lm_eval_version": "0.4.13",
        "upper_git_hash": None,
        "task_hashes": {task: hashlib.sha256(task.encode()).hexdigest() for task in leaves},
        "model_source": "hf",
        "model_name": model,
        "model_name_sanitized": folder.name,
        "system_instruction": None,
        "system_instruction_sha": None,
        "fewshot_as_multiturn": None,
        "chat_template": None,
        "chat_template_sha": None,
        "total_evaluation_time_seconds": "12.5",
    }
    path = folder / f"results_{time}.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


# --- what the tests of `medprobe import lm-eval` share -------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE = REPO_ROOT / "medprobe" / "demo_data" / "medlama_sample"  # the shipped MedLAMA-format sample
SMALL_MST = {"train_size": 6, "validation_size": 3, "test_size": 6}
MST_CONFIGS = ("comparison", "argminmax", "sorting", "unit_conversion", "reference_range")


def build_exports(root: Path) -> tuple[Path, dict[str, Path]]:
    """A small MST build, and the exported tasks of it and of the MedLAMA sample."""
    from medprobe.building.build import build
    from medprobe.export.lm_eval import export_lm_eval

    mst = root / "mst_data"
    build("mst", mst, params=SMALL_MST)
    export_lm_eval("mst", str(mst), root / "mst")
    export_lm_eval("medlama", str(SAMPLE), root / "medlama")
    return mst, {"mst": root / "mst", "medlama": root / "medlama"}


def medprobe_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "medprobe", *argv], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def one_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("medprobe: error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return result.stderr


def results_of(path: Path) -> dict:
    return json.loads(path.read_text())


def mst_digests(mst_folder: Path) -> tuple[list[str], list[str]]:
    """The ids and content digests medprobe's own MST task records for the test rows of every config."""
    import datasets

    from medprobe.loading import row_digests
    from medprobe.tasks.mst import ITEM_FIELDS

    ids, digests = [], []
    for config in MST_CONFIGS:
        test = datasets.load_dataset(str(mst_folder), config, split="test")
        ids += [f"{config}/{row}" for row in range(test.num_rows)]
        digests += row_digests(test, ITEM_FIELDS, None, config)
    return ids, digests


def tiny_causal_lm_at(folder: Path):
    """A tiny random GPT-2 saved to `folder` (what medprobe's causal-lm prober and lm-eval's hf backend load), and its
    CausalLMProbe."""
    from medprobe.lm.causal_lm import CausalLMProbe
    from tiny_models import byte_bpe_tokenizer, tiny_random_gpt2

    tokenizer = byte_bpe_tokenizer()
    model = tiny_random_gpt2(tokenizer, n_positions=256)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, CausalLMProbe(model, tokenizer, length_normalization="none", progress=False)


def probe_scores(probe):
    """The causal-lm prober's log-likelihoods as lm-eval's would be: each candidate in the query's slot."""

    def scores(doc: dict, context: str, continuations: list[str]) -> list[float]:
        return list(probe.score_candidates([doc["query"]], [doc["candidates"]])[0])

    return scores


def medprobe_run(model: str | Path, out: Path, per_relation: int | None = None, control: bool = True) -> Path:
    """medprobe's causal-lm prober on the MedLAMA sample's hard config as the export scores it (`--candidates relation
    --length-normalization none`), its results JSON at `out`. `control=False` (--no-control): no prompt-bias control
    queries, which lm-eval has no counterpart of and which cost as much again as the real queries with a real model."""
    from medprobe.run import RunRequest, run

    options = {"candidates": "relation", **({"per_relation": per_relation} if per_relation else {})}
    options.update({} if control else {"control": False})
    request = RunRequest(
        task="medlama",
        prober="causal-lm",
        dataset=str(SAMPLE),
        config="hard",
        model=str(model),
        device="cpu",
        prober_options={"length_normalization": "none"},
        task_options=options,
        out=str(out),
    )
    run(request, print_fn=lambda text: None)
    return out
