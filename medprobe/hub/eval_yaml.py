"""The `eval.yaml` a benchmark dataset declares on the Hub (`publish dataset --eval-yaml`), where the Hub's format
allows medprobe's tasks.

The format followed: https://huggingface.co/docs/hub/eval-results, "Registering a Benchmark" and "Eval.yaml
specification", as huggingface/hub-docs docs/hub/eval-results.md has it at commit
e3bb58f5fb17812b4e3bca023e7e6eb9ae5bb584: `name`, `description`, `evaluation_framework` (one framework per benchmark,
from an enumeration the Hugging Face team maintains in huggingface/huggingface.js packages/tasks/src/eval.ts) and
`tasks[]`, each with an `id` (required) and an optional `config` (default: the dataset's default config) and `split`
(default: test); `inspect-ai` tasks also need `field_spec`, `solvers` and `scorers`. The file is validated when it is
pushed, and a benchmark is listed only once the Hub has allow-listed it.

What this means for medprobe: its tasks are a prober ranking a candidate space (MedLAMA), scoring choices with a
trained head (MST), classifying pairs (DisKnE), or tracking ranks through contexts (context variance), run by
medprobe; none of the listed frameworks runs them (inspect-ai's solvers and scorers evaluate a chat model's answers,
which would score other numbers than medprobe's acc@k). The eval.yaml medprobe writes names `medprobe` as its
framework, one task per config (its id the config's name, as the `.eval_results` entries of `publish results` name
it: `task_id`) on the test split, and is refused while `medprobe` is not on the Hub's list
(`EVALUATION_FRAMEWORKS`, as that file lists them at the commit below): the Hub would refuse it at push time.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from medprobe.hub.checks import PublishError

# huggingface/huggingface.js packages/tasks/src/eval.ts, EVALUATION_FRAMEWORKS, at commit 0589d130abd3393e9a68066f4e90ca2e7397b4ec
EVALUATION_FRAMEWORKS = frozenset(
    {
        "exgentic",
        "inspect-ai",
        "math-arena",
        "mteb",
        "olmocr-bench",
        "harbor",
        "archipelago",
        "apex-evals",
        "screenspot-pro",
        "swe-bench",
        "swe-bench-pro",
        "nemo-evaluator",
        "yc-bench",
        "open-asr-leaderboard",
        "mdpbench",
        "parsebench",
        "video-mme-v2",
        "claw-eval",
        "wildclawbench",
    }
)
FRAMEWORK = "medprobe"
DEFAULT_CONFIG = "default"  # a task's config "defaults to the dataset's default config"
DEFAULT_SPLIT = "test"  # a task's split "defaults to test"
SPEC = "https://huggingface.co/docs/hub/eval-results#evalyaml-specification"
TOP_KEYS = {"name": str, "description": str, "evaluation_framework": str, "tasks": list}
TASK_KEYS = {"id": str, "config": str, "split": str}
INSPECT_KEYS = ("field_spec", "solvers", "scorers")


def task_id(config: str | None) -> str:
    """The task id medprobe gives a config in the eval.yaml it writes, and in the `.eval_results` entries of its runs
    (medprobe.hub.eval_entries): the config's name."""
    return config or DEFAULT_CONFIG


def card_description(card_text: str) -> str:
    """The first paragraph under the card's title (the dataset card medprobe build wrote), on one line."""
    body = card_text.split("---", 2)[2] if card_text.startswith("---") else card_text
    paragraphs = [" ".join(part.split()) for part in body.split("\n\n")]
    text = [part for part in paragraphs if part and not part.startswith(("#", "<!--", "|", "```", "$"))]
    return text[0] if text else ""


def eval_yaml(name: str, description: str, rows: dict[str, dict[str, int]]) -> dict:
    """The eval.yaml of a built folder: a task per config that has the test split, named as `publish results` names it."""
    tasks = [
        {"id": task_id(config), "config": config, "split": DEFAULT_SPLIT}
        for config, splits in rows.items()
        if DEFAULT_SPLIT in splits
    ]
    return {"name": name, "description": description, "evaluation_framework": FRAMEWORK, "tasks": tasks}


def spec_problems(data: object) -> list[str]:
    """What in `data` the documented eval.yaml specification does not allow (empty: it conforms)."""
    if not isinstance(data, dict):
        return ["not a mapping"]
    problems = [f"{key}: missing" for key in TOP_KEYS if key not in data]
    problems += [
        f"{key}: expected {kind.__name__}" for key, kind in TOP_KEYS.items() if key in data and not isinstance(data[key], kind)
    ]
    framework = data.get("evaluation_framework")
    extra = set(data) - set(TOP_KEYS)
    problems += [f"{key}: not a field of eval.yaml" for key in sorted(extra)]
    tasks = data.get("tasks") if isinstance(data.get("tasks"), list) else []
    if not tasks:
        problems.append("tasks: no task")
    ids = [task.get("id") for task in tasks if isinstance(task, dict)]
    problems += [f"tasks: id {task!r} given twice" for task in sorted({i for i in ids if ids.count(i) > 1}, key=str)]
    for number, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("id"), str) or not task["id"]:
            problems.append(f"tasks[{number}]: no id")
            continue
        allowed = {**TASK_KEYS, **dict.fromkeys(INSPECT_KEYS, object)} if framework == "inspect-ai" else TASK_KEYS
        problems += [f"tasks[{number}].{key}: not a field of a task" for key in sorted(set(task) - set(allowed))]
        problems += [
            f"tasks[{number}].{key}: expected str"
            for key in ("config", "split")
            if key in task and not isinstance(task[key], str)
        ]
        if framework == "inspect-ai":
            problems += [f"tasks[{number}].{key}: required with inspect-ai" for key in INSPECT_KEYS if key not in task]
    return problems


def checked_text(data: dict, frameworks: frozenset[str] | None = None) -> str:
    """The YAML text of `data`, refused (one line) when it does not follow the specification or names a framework the
    Hub does not list."""
    problems = spec_problems(data)
    if problems:
        raise PublishError(f"--eval-yaml: the eval.yaml would not follow the Hub's specification ({'; '.join(problems)}; {SPEC})")
    framework, frameworks = data["evaluation_framework"], frameworks or EVALUATION_FRAMEWORKS
    if framework not in frameworks:
        raise PublishError(
            f"--eval-yaml: the Hub accepts an eval.yaml only with an evaluation_framework from its list ({', '.join(sorted(frameworks))}; "
            f"huggingface.js packages/tasks/src/eval.ts), and {framework!r} is not on it: the push would be refused. None of those "
            "runs medprobe's probing (inspect-ai scores a chat model's answers, not a prober's ranking), so the Hub's format does "
            "not allow medprobe's tasks yet: leave out --eval-yaml (the dataset and the model-index results do not need it)"
        )
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


def write_eval_yaml(card_path: Path, rows: dict[str, dict[str, int]], staging: Path) -> Path:
    """eval.yaml for the built folder of `card_path`, checked, written into `staging` (never into the user's folder)."""
    from medprobe.hub.checks import read_card

    card = read_card(card_path)
    name = card.data.get("pretty_name") or card_path.parent.name
    text = checked_text(eval_yaml(name, card_description(card.text) or name, rows))
    path = staging / "eval.yaml"
    path.write_text(text, encoding="utf-8")
    return path
