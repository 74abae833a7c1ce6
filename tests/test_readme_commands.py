"""Every `medprobe probe` command of the README and the docs pages parses with the CLI as written (flags, values,
choices), the blocks tests/test_docs_code_blocks.py skips (Hub models, licensed data, long runs) included."""

import re
from pathlib import Path

import pytest

from medprobe.cli.probe import parse_probe_arguments

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_WORDS = {"$model": "some-org/model", "${model##*/}": "model", "$i": "0", "$category": "symptoms_diseases"}


def probe_commands() -> list[str]:
    """The `medprobe probe` lines of the pages' bash blocks, continuation lines joined, comments cut."""
    blocks = [block for page in PAGES for block in re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)]
    commands = []
    for block in blocks:
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split(" #", 1)[0].strip()
            if command.startswith("medprobe probe "):
                commands.append(command)
    return commands


def test_the_pages_have_probe_commands():
    assert len(probe_commands()) >= 30  # the extraction finds them (35 when written)


@pytest.mark.parametrize("command", probe_commands())
def test_probe_command_parses(command):
    for word, value in SHELL_WORDS.items():
        command = command.replace(word, value)
    command = re.sub(r"<[^>]+>", "placeholder", command)
    assert "$" not in command, f"a shell word this test does not know: {command}"
    args = parse_probe_arguments(command.split()[2:])
    assert args.prober and args.dataset and args.model
