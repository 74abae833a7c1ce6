"""A griffe extension for the API page: doctest examples written flush in a docstring become fenced code.

medprobe's docstrings give their examples as plain `>>>` lines (tests/test_python_api.py runs them).
Rendered as Markdown, `>>>` starts a nested quote and an output such as `[('full', ...)]` reads as a
reference link, which mkdocstrings' cross-references then fail to resolve (a strict build fails). This
wraps every run of such lines (a `>>>` line and what follows it up to a blank line) in a `pycon` fence;
examples indented as code blocks already are left alone.
"""

from __future__ import annotations

from typing import Any

import griffe

FENCE = "```"


def fenced(text: str) -> str:
    lines, out, index = text.splitlines(), [], 0
    while index < len(lines):
        line = lines[index]
        indent = len(line) - len(line.lstrip())
        if not line.lstrip().startswith(">>>") or indent >= 4:
            out.append(line)
            index += 1
            continue
        end = index
        while end < len(lines) and lines[end].strip():
            end += 1
        out += [" " * indent + FENCE + "pycon", *lines[index:end], " " * indent + FENCE]
        index = end
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fenced(obj.docstring.value)
