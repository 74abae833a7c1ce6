"""`medprobe publish leaderboard --results-repo ORG/NAME --space ORG/SPACE`: a Space that builds the leaderboard.

The Space holds five files: `app.py` (hub_cards/leaderboard_app.py, the same for every leaderboard),
`space.json` (the results repo and the title), the wheel of the medprobe that publishes it
(medprobe.hub.wheel: medprobe is not on PyPI), `requirements.txt` (that wheel's dependencies, which the
Space's build installs; the app puts the wheel itself first on its path when it starts) and the card
(`README.md`: gradio SDK). When it starts, and on request, the app runs what `medprobe leaderboard
hub:ORG/NAME` runs and serves the pages it writes. Before a real upload the board is built here once
from the results repo, so a repo the Space could not build from stops the publish, not the Space.

Why the requirements do not name the wheel as a path: a Space's build installs requirements.txt alone,
before the repo's other files are copied in (its Dockerfile mounts only that file), so a line
`./medprobe-0.1.0-py3-none-any.whl` would fail the build; a URL to the file in the Space would need a
token for a private Space. The dependencies come from the wheel's own metadata, so they are the ones
`pip install` of the wheel would take.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

from medprobe.hub.checks import PublishError

SDK_VERSION = "6.31.0"  # the gradio the app was checked with (hub_cards/leaderboard_app.py says so too)


def space_card(results_repo: str, title: str) -> str:
    return "\n".join(
        [
            "---",
            f"title: {json.dumps(title)}",
            "emoji: 🩺",
            "colorFrom: blue",
            "colorTo: gray",
            "sdk: gradio",
            f"sdk_version: {SDK_VERSION}",
            "app_file: app.py",
            "pinned: false",
            "tags:",
            "- medprobe",
            "- leaderboard",
            "datasets:",
            f"- {results_repo}",
            "---",
            "",
            f"# {title}",
            "",
            f"The medprobe leaderboard of the results dataset [{results_repo}](https://huggingface.co/datasets/{results_repo}),",
            "built when the Space starts and on request: every run read back and every number recomputed from its",
            "per-item outcomes; two models share a letter only when no paired test separates them (every pair",
            "tested, Holm over all of a board's pairs). The same pages on your machine:",
            "",
            "```bash",
            f"medprobe leaderboard hub:{results_repo} --out site",
            "```",
            "",
        ]
    )


def requirements(wheel: Path) -> str:
    """requirements.txt: the wheel's own dependencies (its METADATA's Requires-Dist outside any extra)."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        fields = Parser().parsestr(archive.read(metadata).decode("utf-8"))
    needed = [line for line in fields.get_all("Requires-Dist") or [] if "extra ==" not in line]
    return "\n".join(
        [
            f"# medprobe {fields['Version']} is not on PyPI: its wheel, {wheel.name}, is in this Space, and app.py puts it",
            "# first on its path when it starts. These are that wheel's dependencies, which the Space's build installs",
            "# (gradio comes from the card's sdk_version).",
            *needed,
            "",
        ]
    )


def stage_space(staging: Path, results_repo: str, title: str, include_samples: bool) -> None:
    """The Space's files in `staging`."""
    from medprobe.hub.wheel import running_wheel
    from medprobe.resources import card_template

    shutil.copyfile(card_template("leaderboard_app.py"), staging / "app.py")
    config = {"results_repo": results_repo, "title": title, "include_samples": include_samples}
    (staging / "space.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    wheel = running_wheel(staging)
    (staging / "requirements.txt").write_text(requirements(wheel), encoding="utf-8")
    (staging / "README.md").write_text(space_card(results_repo, title), encoding="utf-8")


def space_plan(args: argparse.Namespace, staging: Path):
    from medprobe.hub.checks import folder_files
    from medprobe.hub.publish import Plan, access_calls, check_repo_id, upload_call

    results_repo = check_repo_id(args.results_repo, "--results-repo")
    space = check_repo_id(args.space, "--space")
    title = args.title or f"medprobe leaderboard: {results_repo}"
    stage_space(staging, results_repo, title, args.include_samples)
    files = folder_files(staging)
    before, after = access_calls(space, "space", args.private, False, space_sdk="gradio")
    upload = upload_call(space, "space", staging, files, f"medprobe leaderboard of {results_repo}")
    notes = [
        "app.py is medprobe's shared leaderboard app (hub_cards/leaderboard_app.py): it builds the board from "
        f"hub:{results_repo} at start and on request (its button, or POST /rebuild), and serves the pages under /board/",
        "gradio, not a static Space: a static Space runs no code, so it could only show pages frozen at upload time",
        f"{next(f.path for f in files if f.path.endswith('.whl'))} is the medprobe running this command (it is not on PyPI): "
        "requirements.txt lists its dependencies and app.py runs it",
        "a real publish first builds the board here from the results repo (the Space's own first step), and stops if it cannot",
    ]
    visibility = "private" if args.private else "public"
    return Plan("leaderboard", space, "space", visibility, [*before, upload, *after], files, notes)


def check_results_repo(results_repo: str, include_samples: bool) -> str:
    """Build the board from the results repo once, as the Space will; what it holds, in words."""
    from medprobe.leaderboard.build import build_leaderboard

    with tempfile.TemporaryDirectory(prefix="medprobe-board-") as tmp:
        data = build_leaderboard(
            [f"hub:{results_repo}"], Path(tmp) / "site", include_samples=include_samples, print_fn=lambda _: None
        )
    if not data["boards"]:
        raise PublishError(
            f"hub:{results_repo} gives an empty leaderboard ({len(data['excluded'])} run(s) left out): publish runs to it first "
            f"(`medprobe publish results RUN --results-repo {results_repo}`)"
        )
    return f"checked: hub:{results_repo} builds {len(data['boards'])} board(s) of {sum(len(b['rows']) for b in data['boards'])} run(s)"


def run_publish_leaderboard(args: argparse.Namespace) -> int:
    from medprobe.hub.publish import require_token, run_plan, token_status

    with tempfile.TemporaryDirectory(prefix="medprobe-space-") as staging:
        plan = space_plan(args, Path(staging))
        print(plan.describe(token_status(args.token)))
        if args.dry_run:
            print("dry run: nothing was sent")
            return 0
        token = require_token(args.token)
        print(check_results_repo(args.results_repo, args.include_samples))
        run_plan(plan, token)
    print(f"published {plan.url} ({plan.visibility})")
    return 0
