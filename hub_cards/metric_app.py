"""The app of a medprobe metric Space (gradio SDK), shared by every metric.

`medprobe publish metric NAME` uploads this file as `app.py` beside the metric's module
(`NAME.py`), its card (`README.md`) and `requirements.txt`. The app finds the one evaluate
module beside it, so the same file serves every metric; it is written for current gradio
(Blocks, no gradio 3 interfaces), because evaluate's own `launch_gradio_widget` no longer runs.
It was checked with gradio 6.31.0 (tests/test_publish.py builds it when gradio is installed), the
`sdk_version` of every metric card: change both together.

The page shows the metric card and a JSON box of keyword arguments for `compute`, prefilled
with the first `.compute(...)` example of the card (or, failing that, a skeleton built from the
module's features). Run it locally with `python app.py` in a folder laid out like the Space.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import evaluate

HERE = Path(__file__).resolve().parent


def module_file(folder: Path = HERE) -> Path:
    """The evaluate module beside this app: the one Python file that is not the app itself."""
    modules = [p for p in sorted(folder.glob("*.py")) if p.name != "app.py"]
    if len(modules) != 1:
        raise FileNotFoundError(f"{folder} must hold exactly one metric module beside app.py, found {len(modules)}")
    return modules[0]


def card_text(folder: Path = HERE) -> str:
    """The card's Markdown without its YAML header."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    if text.startswith("---"):
        text = text.split("\n---", 2)[-1].lstrip("-\n")
    return text


def card_example(card: str) -> dict | None:
    """Keyword arguments of the first `.compute(...)` call in the card's Python examples."""
    for block in re.findall(r"```python\n(.*?)```", card, re.DOTALL):
        lines = [re.sub(r"^(>>>|\.\.\.) ?", "", line) for line in block.splitlines()]
        for first, line in enumerate(lines):
            if ".compute(" not in line:
                continue
            call = ["metric" + line[line.index(".compute(") :]]
            # the call ends at the first line after which it parses (doctest output follows it)
            for end in range(first + 1, len(lines) + 1):
                try:
                    tree = ast.parse("\n".join(call + lines[first + 1 : end]).strip(), mode="eval")
                except SyntaxError:
                    continue
                try:
                    return {kw.arg: ast.literal_eval(kw.value) for kw in tree.body.keywords if kw.arg}
                except (ValueError, AttributeError):
                    break
    return None


def feature_example(feature) -> object:
    """A placeholder value for one feature (used when the card has no example)."""
    if hasattr(feature, "feature"):  # List / Sequence
        return [feature_example(feature.feature)] * 2
    dtype = getattr(feature, "dtype", "string")
    if dtype.startswith(("int", "uint")):
        return 0
    if dtype.startswith("float"):
        return 0.5
    if dtype == "bool":
        return True
    return "text"


def default_arguments(metric: evaluate.EvaluationModule, card: str) -> dict:
    example = card_example(card)
    if example:
        return example
    features = metric.features[0] if isinstance(metric.features, list) else metric.features
    return {name: [feature_example(feature)] for name, feature in features.items()}


def compute(metric: evaluate.EvaluationModule, arguments: str) -> dict:
    """`metric.compute(**json.loads(arguments))`, with errors a user can read."""
    try:
        kwargs = json.loads(arguments)
    except json.JSONDecodeError as err:
        raise ValueError(f"the arguments are not valid JSON: {err}") from err
    if not isinstance(kwargs, dict):
        raise ValueError("the arguments must be a JSON object of compute() keyword arguments")
    return metric.compute(**kwargs)


def build_demo():
    import gradio as gr

    metric = evaluate.load(str(module_file()))
    card = card_text()

    def run(arguments: str) -> dict:
        try:
            return compute(metric, arguments)
        except (ValueError, TypeError, KeyError) as err:
            raise gr.Error(str(err)) from err

    with gr.Blocks(title=metric.name) as demo:
        with gr.Row():
            with gr.Column():
                arguments = gr.Code(
                    value=json.dumps(default_arguments(metric, card), indent=2, ensure_ascii=False),
                    language="json",
                    label="compute() keyword arguments (JSON)",
                )
                button = gr.Button("Compute", variant="primary")
            result = gr.JSON(label="Result")
        button.click(run, inputs=arguments, outputs=result)
        gr.Markdown(card)
    return demo


if __name__ == "__main__":
    build_demo().launch()
