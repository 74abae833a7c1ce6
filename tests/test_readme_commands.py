"""Every `medprobe probe` command of the README parses with the CLI as written (flags, values, choices)."""

import re
from pathlib import Path

import pytest

from medprobe.cli.probe import parse_probe_arguments

README = Path(__file__).resolve().parents[1] / "README.md"
SHELL_WORDS = {"$model": "some-org/model", "${model##*/}": "model", "$i": "0", "$category": "symptoms_diseases"}


def probe_commands() -> list[str]:
    """The `medprobe probe` lines of the README's bash blocks, continuation lines joined, comments cut."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    commands = []
    for block in blocks:
        for command in block.replace("\\\n", " ").splitlines():
            command = command.split(" #", 1)[0].strip()
            if command.startswith("medprobe probe "):
                commands.append(command)
    return commands


def test_the_readme_has_probe_commands():
    assert len(probe_commands()) >= 15  # the extraction finds them (19 when written)


@pytest.mark.parametrize("command", probe_commands())
def test_readme_probe_command_parses(command):
    for word, value in SHELL_WORDS.items():
        command = command.replace(word, value)
    command = re.sub(r"<[^>]+>", "placeholder", command)
    assert "$" not in command, f"a shell word this test does not know: {command}"
    args = parse_probe_arguments(command.split()[2:])
    assert args.prober and args.dataset and args.model
