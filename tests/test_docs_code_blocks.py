"""Every code block of README.md and docs/**/*.md runs as written, offline, on tiny data.

A block is a fenced block with a language: `python` blocks run in a Python subprocess, `bash` blocks
with `bash -euo pipefail`; both in a fresh copy of a small workspace (WORKSPACE below: the packaged
MedLAMA-format sample as out/medlama, MST and context variance built from medprobe's own generators),
with the Hugging Face libraries offline. Blocks in DATA_LANGUAGES (output, file layouts, config
snippets) are shown, not run. A block that cannot run here is marked on the line before it with

    <!-- docs-test: skip "why: what it needs that a test cannot have (the Hub, licensed data, minutes)" -->

and is reported as a pytest skip with that reason; a marker without a reason, or not followed by a
block, fails. Each block runs on its own, so a reader can copy any one of them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN_LANGUAGES = {"python", "bash"}
DATA_LANGUAGES = {"text", "toml", "yaml", "json", "bibtex"}
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)(?P<language>[\w-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<rest>.*?)\s*-->\s*$")
SKIP = re.compile(r'^skip\s+"(?P<reason>[^"]*)"$')
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "MPLBACKEND": "Agg"}
BLOCK_TIMEOUT_S = 180


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    skip: str | None  # the marker's reason, None when the block runs
    marker_error: str | None = None
    end: int = 0  # 1-based line of the closing fence

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of one page, each with the docs-test marker on the last non-blank line above it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        end = next(
            (j for j in range(index + 1, len(lines)) if lines[j].strip() == fence),
            None,
        )
        assert end is not None, f"{page.relative_to(ROOT)}:{index + 1}: a code block that is never closed"
        code = "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines[index + 1 : end])
        skip, error = marker_above(lines, index)
        blocks.append(Block(page, index + 1, opening["language"], code + "\n", skip, error, end + 1))
        index = end + 1
    return blocks


def marker_above(lines: list[str], fence_index: int) -> tuple[str | None, str | None]:
    """(skip reason, error) from the marker on the last non-blank line before the fence, if there is one."""
    above = fence_index - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    found = MARKER.match(lines[above]) if above >= 0 else None
    if not found:
        return None, None
    skip = SKIP.match(found["rest"])
    if not skip or not skip["reason"].strip():
        return None, f'a docs-test marker must read `skip "reason"` with a reason: {lines[above].strip()}'
    return skip["reason"].strip(), None


ALL_BLOCKS = [block for page in PAGES for block in blocks_of(page)]
RUNNABLE = [block for block in ALL_BLOCKS if block.language in RUN_LANGUAGES]


def test_the_pages_have_runnable_blocks():
    # the parser finds them: a change to the fence syntax would otherwise leave nothing to run
    assert len(PAGES) >= 20, [str(page) for page in PAGES]
    assert len(RUNNABLE) >= 60, len(RUNNABLE)
    assert sum(block.skip is None for block in RUNNABLE) >= 15


def test_every_block_says_its_language():
    unknown = [f"{b.name}: {b.language or 'no language'}" for b in ALL_BLOCKS if b.language not in RUN_LANGUAGES | DATA_LANGUAGES]
    assert not unknown, f"give each block one of {sorted(RUN_LANGUAGES | DATA_LANGUAGES)} (shell: bash): {unknown}"


def test_every_marker_has_a_reason_and_a_block():
    errors = [f"{block.name}: {block.marker_error}" for block in ALL_BLOCKS if block.marker_error]
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        inside = {n for b in ALL_BLOCKS if b.page == page for n in range(b.line - 1, b.end)}  # 0-based, fences included
        for number, line in enumerate(lines):
            if number in inside or not MARKER.match(line):
                continue
            following = next((text for text in lines[number + 1 :] if text.strip()), "")
            if not FENCE.match(following):
                errors.append(f"{page.relative_to(ROOT)}:{number + 1}: a docs-test marker not followed by a code block")
    data_skips = [block.name for block in ALL_BLOCKS if block.skip and block.language in DATA_LANGUAGES]
    assert not errors and not data_skips, errors + [f"{name}: a data block is never run: no marker" for name in data_skips]


@pytest.fixture(scope="session")
def block_env(tmp_path_factory) -> dict[str, str]:
    """The environment of every block: offline, this checkout's medprobe and the venv's commands first."""
    env = {**os.environ, **OFFLINE}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # one embedding cache for the session: blocks that probe the same names read them, as a reader's second run does
    env["MEDPROBE_EMBEDDING_CACHE"] = str(tmp_path_factory.mktemp("embedding-cache"))
    return env


@pytest.fixture(scope="session")
def workspace(tmp_path_factory, block_env) -> Path:
    """The folder every block starts from: out/medlama (the packaged MedLAMA-format sample: real MedLAMA
    needs a download), out/mst (generated, small splits) and out/context_variance (its shipped sample), each
    made by the command the pages give for it."""
    folder = tmp_path_factory.mktemp("docs-workspace")
    for command in (
        ["build", "medlama", "--sample", "--out", "out/medlama"],
        ["build", "mst", "--out", "out/mst", "--set", "train_size=200", "--set", "validation_size=20", "--set", "test_size=100"],
        ["build", "context_variance", "--out", "out/context_variance"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "medprobe.cli", *command], cwd=folder, env=block_env, capture_output=True, text=True
        )
        assert done.returncode == 0, f"medprobe {' '.join(command)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return folder


def run_block(block: Block, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess | None:
    """Run one block in `folder` (a fresh copy of the workspace); None when it ran past BLOCK_TIMEOUT_S."""
    command = [sys.executable, "-c", block.code] if block.language == "python" else ["bash", "-euo", "pipefail", "-c", block.code]
    try:
        return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None


@pytest.fixture(scope="session")
def block_outcomes(
    request, workspace: Path, block_env: dict[str, str], tmp_path_factory
) -> dict[str, subprocess.CompletedProcess | None]:
    """Every block this session selected, two at a time where this worker has two cores: a block is mostly a
    process starting and importing medprobe, which uses one core, and the blocks are independent (each has its own copy of the workspace; the
    shared embedding cache is written atomically and a lost entry is only a miss)."""
    selected = [item.callspec.params["block"] for item in request.session.items if item.originalname == "test_block_runs"]
    to_run = [block for block in selected if not block.skip]

    def one(block: Block) -> tuple[str, subprocess.CompletedProcess | None]:
        folder = tmp_path_factory.mktemp("block") / "work"
        shutil.copytree(workspace, folder)
        return block.name, run_block(block, folder, block_env)

    cores = (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)  # xdist's workers share them
    with ThreadPoolExecutor(max_workers=max(1, min(2, cores))) as pool:
        return dict(pool.map(one, to_run))


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda block: block.name)
def test_block_runs(block: Block, block_outcomes: dict[str, subprocess.CompletedProcess | None]):
    if block.skip:
        pytest.skip(block.skip)
    done = block_outcomes[block.name]
    if done is None:
        pytest.fail(f"{block.name} ran past {BLOCK_TIMEOUT_S} s: make it smaller or mark it skip with the reason")
    assert done.returncode == 0, (
        f"{block.name} exited {done.returncode}\n--- block\n{block.code}--- stdout\n{done.stdout[-4000:]}"
        f"\n--- stderr\n{done.stderr[-4000:]}"
    )
