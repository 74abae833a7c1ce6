"""`medprobe plugin init NAME [--out DIR]`: a working plugin distribution, written from the templates in skeleton/.

For NAME `toy`: the distribution medprobe-toy (folder DIR, default ./medprobe-toy) with the package
medprobe_toy: the benchmark and task `toy` (a builder, its card, a task with its own evaluate metric
`toy_accuracy`, an lm-eval export hook), the prober `toy_order`, their entries and BibTeX, the entry
points in pyproject.toml, and tests. `pip install -e DIR` and it passes `medprobe plugin check
medprobe-toy` as written. In a template, {{name}}, {{dist}}, {{package}}, {{prober}}, {{metric}} and
{{Class}} are the names; in a template's path, PACKAGE and METRIC are.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from medprobe.contracts import UserError

TEMPLATES = Path(__file__).resolve().with_name("skeleton")
NAME = re.compile(r"^[a-z][a-z0-9_]{1,39}$")


@dataclass(frozen=True)
class PluginNames:
    name: str  # the benchmark and its task
    dist: str
    package: str
    prober: str
    metric: str
    Class: str  # noqa: N815 - the placeholder {{Class}}: the CamelCase stem of the class names

    @classmethod
    def of(cls, name: str) -> PluginNames:
        camel = "".join(part.capitalize() for part in name.split("_"))
        return cls(name, f"medprobe-{name.replace('_', '-')}", f"medprobe_{name}", f"{name}_order", f"{name}_accuracy", camel)

    def fill(self, text: str) -> str:
        for key, value in vars(self).items():
            text = text.replace("{{" + key + "}}", value)
        return text

    def path(self, relative: Path) -> Path:
        """Where a template goes: its path without .tmpl, PACKAGE and METRIC named, the tests named after the package."""
        parts = [part.replace("PACKAGE", self.package).replace("METRIC", self.metric) for part in relative.with_suffix("").parts]
        if parts == ["tests", "test_plugin.py"]:
            parts[-1] = f"test_{self.package}.py"
        return Path(*parts)


def check_name(name: str) -> PluginNames:
    """The names of a new plugin (its task NAME and prober NAME_order), none of them like a name the registry
    holds, of either kind: `plugin init contrastive` would make `--task contrastive` a plugin's and `--prober
    contrastive` medprobe's. Names are compared with - and _ alike (`mlm_head` is the prober mlm-head)."""
    if not NAME.fullmatch(name):
        raise UserError(
            f"plugin name {name!r}: use 2 to 40 lower-case letters, digits and _, starting with a letter (e.g. drug_class)"
        )
    names = PluginNames.of(name)
    for new, what in ((names.name, "benchmark and task"), (names.prober, "prober")):
        taken = registered_like(new)
        if taken:
            raise UserError(
                f"plugin name {name!r}: its {what} {new!r} would be named like the registered {taken}; choose another NAME"
            )
    return names


def registered_like(new: str) -> str | None:
    """The registered benchmark, task or prober named like `new` (- and _ alike), as "prober 'mlm-head'"; or None."""
    from medprobe.registry import registry

    found = registry()
    kinds = (("benchmark", found.benchmarks()), ("task", list(found.tasks)), ("prober", list(found.probers)))
    for kind, names in kinds:
        for taken in names:
            if taken.replace("-", "_") == new:
                return f"{kind} {taken!r}"
    return None


def write_skeleton(name: str, out: str | Path | None = None) -> tuple[Path, PluginNames]:
    """Write the plugin `name` into `out` (default ./medprobe-NAME), a new or empty folder: all of it or nothing."""
    names = check_name(name)
    out = Path(out or names.dist).expanduser()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--out {out} is not a new or empty folder; give another --out")
    staging = out.with_name(f".{out.name}.plugin-init")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for template in sorted(TEMPLATES.rglob("*.tmpl")):
            target = staging / names.path(template.relative_to(TEMPLATES))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(names.fill(template.read_text(encoding="utf-8")), encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty: checked above
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out, names
