"""What an lm-evaluation-harness run wrote with `--output_path OUT --log_samples`, read for `medprobe import lm-eval`.

    run = read_run(Path("out/lm_eval"))      # OUT, OUT/<model>, or one results_<time>.json
    run.samples_path("medprobe_mst_comparison")
    run.model(), run.command(tasks), run.lm_eval()

lm-eval 0.4 writes `OUT/<model name, sanitised>/results_<time>.json` (per task and group: its results, config and
metadata, versions, n-shot, sample counts; the model, its arguments, `limit`, seeds; lm-eval's version and git hash,
the transformers version, the date) and, with `--log_samples`, `samples_<task>_<time>.jsonl` beside it. It records no
command line: the command a record names is rebuilt from what it does record.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medprobe.contracts import UserError
from medprobe.records.verify import RecordError, read_json_object

RESULTS = re.compile(r"^results_(?P<time>.+)\.json$")
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
DEFAULT_SEEDS = (0, 1234, 1234, 1234)  # lm_eval's --seed default: python, numpy, torch, few-shot


@dataclass
class LoggedRun:
    """One lm-eval run: its results JSON, read."""

    path: Path  # results_<time>.json
    results: dict

    @property
    def time(self) -> str:
        return RESULTS.match(self.path.name)["time"]  # type: ignore[index]

    @property
    def config(self) -> dict:
        config = self.results.get("config")
        return config if isinstance(config, dict) else {}

    def task_config(self, task: str) -> dict:
        found = (self.results.get("configs") or {}).get(task)
        return found if isinstance(found, dict) else {}

    def samples_path(self, task: str) -> Path:
        return self.path.with_name(f"samples_{task}_{self.time}.jsonl")

    def reported(self, name: str) -> dict[str, float]:
        """lm-eval's numbers for a task or group under the `none` filter, by metric (`acc`, `acc_at_1`, ...)."""
        found = (self.results.get("results") or {}).get(name) or {}
        return {key.removesuffix(",none"): value for key, value in found.items() if key.endswith(",none")}

    def sample_counts(self, task: str) -> tuple[int | None, int | None]:
        """(docs in the task, docs lm-eval evaluated: fewer under --limit)."""
        counts = (self.results.get("n-samples") or {}).get(task) or {}
        return counts.get("original"), counts.get("effective")

    def model_args(self) -> dict[str, Any]:
        """lm-eval's --model_args as a dict (the CLI records a dict, `simple_evaluate` the string it was given)."""
        args = self.config.get("model_args")
        if isinstance(args, dict):
            return dict(args)
        if isinstance(args, str) and args:
            return dict(part.split("=", 1) if "=" in part else (part, True) for part in args.split(","))
        return {}

    def model(self) -> tuple[str, dict]:
        """(the model's name, its identity) as lm-eval recorded them: `pretrained` of the model arguments (else
        lm-eval's model name), the backend, the arguments, revision, parameters and dtype; not hashed by medprobe (the
        weights lm-eval read are where it ran)."""
        args = self.model_args()
        name = str(args.get("pretrained") or args.get("model") or self.results.get("model_name") or "unnamed model")
        config = self.config
        identity: dict[str, Any] = {
            "name": name,
            "recorded_by": "lm-eval",
            "backend": config.get("model"),
            "model_args": args,
            "revision": config.get("model_revision"),
            "sha": config.get("model_sha") or None,
            "parameters": config.get("model_num_parameters"),
            "dtype": config.get("model_dtype"),
        }
        if HUB_ID.match(name) and not Path(name).exists() and self.results.get("model_source") == "hf":
            identity["hub_id"] = name
        return name, {key: value for key, value in identity.items() if value is not None}

    def settings(self, tasks: list[str]) -> dict[str, Any]:
        """How lm-eval ran the tasks, for the record's settings: what `medprobe compare` shows beside a difference."""
        config = self.config
        shots = sorted({str(self.results.get("n-shot", {}).get(task, 0)) for task in tasks})
        args = ",".join(f"{key}={value}" for key, value in self.model_args().items())
        dtype = str(config.get("model_dtype") or "").removeprefix("torch.") or None
        return {
            "scored_by": "lm-eval",
            "backend": config.get("model"),
            "model_args": args,
            "dtype": dtype,
            "num_fewshot": int(shots[0]) if len(shots) == 1 and shots[0].isdigit() else ",".join(shots),
            "batch_size": config.get("batch_size"),
            "chat_template": self.results.get("chat_template") is not None,
            "system_instruction": self.results.get("system_instruction"),
        }

    def command(self, tasks: list[str], output: str) -> str:
        """The lm_eval command that repeats the run of `tasks` (a group run whole is named by the group)."""
        config = self.config
        args = ",".join(f"{key}={value}" for key, value in self.model_args().items())
        argv = ["lm_eval", "--model", str(config.get("model") or "hf")]
        if args:
            argv += ["--model_args", args]
        argv += ["--tasks", ",".join(self.task_names(tasks))]
        include = sorted({str(Path(source).parent) for task in tasks if (source := self.config_source(task))})
        for path in include:
            argv += ["--include_path", path]
        for flag, key in (("--device", "device"), ("--batch_size", "batch_size"), ("--limit", "limit")):
            if config.get(key) not in (None, ""):
                argv += [flag, format_number(config[key])]
        shots = {self.results.get("n-shot", {}).get(task) for task in tasks}
        if shots - {0, None}:
            argv += ["--num_fewshot", str(max(shot for shot in shots if shot is not None))]
        if self.results.get("chat_template") is not None:
            argv.append("--apply_chat_template")
        if self.results.get("system_instruction"):
            argv += ["--system_instruction", str(self.results["system_instruction"])]
        if self.results.get("fewshot_as_multiturn"):
            argv.append("--fewshot_as_multiturn")
        seeds = tuple(config.get(key) for key in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed"))
        if None not in seeds and seeds != DEFAULT_SEEDS:
            argv += ["--seed", ",".join(map(str, seeds))]
        return shlex.join([*argv, "--log_samples", "--output_path", output])

    def config_source(self, task: str) -> str | None:
        source = (self.task_config(task).get("metadata") or {}).get("config_source")
        return source if isinstance(source, str) else None

    def task_names(self, tasks: list[str]) -> list[str]:
        """`tasks` as named on the command line: a group whose every task is among them by its name."""
        named, left = [], list(tasks)
        for group, members in (self.results.get("group_subtasks") or {}).items():
            if members and set(members) <= set(left) and not group.endswith("_micro"):
                named.append(group)
                left = [task for task in left if task not in members]
        return named + left

    def lm_eval(self, tasks: list[str]) -> dict[str, Any]:
        """lm-eval's own record of the run of `tasks`, for the record's `source`."""
        keys = ("lm_eval_version", "git_hash", "upper_git_hash", "transformers_version", "date")
        found = {key: self.results.get(key) for key in keys if self.results.get(key) is not None}
        hashes = self.results.get("task_hashes") or {}
        found["task_hashes"] = {task: hashes[task] for task in tasks if task in hashes}
        seconds = self.results.get("total_evaluation_time_seconds")
        if seconds is not None:
            found["total_evaluation_time_seconds"] = float(seconds)
        return found

    def versions(self) -> dict[str, str]:
        """The libraries that computed the numbers (lm-eval's environment, not the importing machine's)."""
        from medprobe import __version__

        found = {"medprobe": __version__}
        for name, key in (("lm-eval", "lm_eval_version"), ("transformers", "transformers_version")):
            if self.results.get(key):
                found[name] = str(self.results[key])
        torch = re.search(r"PyTorch version: (\S+)", str(self.results.get("pretty_env_info") or ""))
        if torch:
            found["torch"] = torch[1]
        return found


def format_number(value: Any) -> str:
    """5.0 -> 5 (lm-eval records --limit 5 as 5.0)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def find_results(output: Path) -> Path:
    """The results JSON of OUTPUT: the file itself, or the one results_*.json in the folder or a folder below it."""
    if output.is_file():
        if not RESULTS.match(output.name):
            raise UserError(f"{output} is not an lm-eval results file (results_<time>.json); give lm_eval's --output_path")
        return output
    if not output.is_dir():
        from medprobe.local_paths import missing_message

        raise UserError(missing_message(str(output), "OUTPUT_DIR", "give the folder lm_eval wrote (--output_path)"))
    found = sorted({*output.glob("results_*.json"), *output.glob("*/results_*.json")})
    found = [path for path in found if RESULTS.match(path.name)]
    if not found:
        raise UserError(
            f"{output} holds no lm-eval results (results_<time>.json in it or a folder below): give lm_eval's --output_path"
        )
    if len(found) > 1:
        shown = ", ".join(str(path.relative_to(output)) for path in found[:4]) + (", ..." if len(found) > 4 else "")
        raise UserError(f"{output} holds {len(found)} lm-eval runs ({shown}); give the results_<time>.json of one")
    return found[0]


def read_run(output: Path) -> LoggedRun:
    """The run of OUTPUT (`find_results`), its results JSON checked to be lm-eval's."""
    path = find_results(output)
    try:
        results = read_json_object(path, "an lm-eval results file")
    except RecordError as err:
        raise UserError(str(err)) from None
    if not isinstance(results.get("results"), dict) or not isinstance(results.get("configs"), dict):
        raise UserError(f"{path} is not an lm-eval results file (no results and configs)")
    return LoggedRun(path, results)
