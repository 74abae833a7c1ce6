"""Writing a run's files as one unit: the outcomes, predictions and plot first, the results JSON last, naming the
sha256 of each of the others (medprobe.atomic.write_all_atomically: renamed with signals held, rolled back
on a failed rename).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from medprobe.atomic import Writer, shown_path, write_all_atomically
from medprobe.digests import sha256_file
from medprobe.records.record import RunRecord
from medprobe.records.tables import draw_per_group, plot_format


def save_run(
    record: RunRecord,
    out: str | Path,
    *,
    plot: str | Path | None = None,
    plot_metric: str = "",
    plot_record: RunRecord | None = None,
    more: Iterable[tuple[str | Path | None, Writer]] = (),
) -> list[Path]:
    """Write a run's files as one unit and print each path written: the `more` outputs (outcomes,
    predictions) and the plot (of `plot_record`, default the record) first, the results JSON last,
    naming the sha256 of each of the others in `files` (medprobe.atomic.write_all_atomically), so that
    a reader can tell a JSON from a write that a SIGKILL cut between two renames."""
    out = Path(out)
    written: dict[Path, Path] = {}  # target -> its temporary file, filled as each is written

    def keeping(target: str | Path, write: Writer) -> Writer:
        def write_and_keep(temp: Path) -> None:
            write(temp)
            written[Path(target)] = temp

        return write_and_keep

    def write_json(temp: Path) -> None:
        record.files = {path_from(out, target): sha256_file(temp) for target, temp in written.items()}
        temp.write_text(record.to_json(), encoding="utf-8")

    companions = [
        *more,
        (plot, lambda temp: draw_per_group(plot_record or record, plot_metric, temp, plot_format(plot))),
    ]
    paths = write_all_atomically([*((t, keeping(t, w)) for t, w in companions if t), (out, write_json)])
    for path in [paths[-1], *paths[:-1]]:  # the results JSON first, as the user asked for it
        print(f"wrote {shown_path(path)}")  # as in OUT: a profile's runs are written in its staging folder
    return paths


def path_from(out: Path, target: str | Path) -> str:
    """`target` as the results JSON `out` names it: relative to the JSON's folder (the files travel together),
    absolute where no relative path leads there (another drive)."""
    target = Path(target).expanduser().resolve()
    try:
        return Path(os.path.relpath(target, out.expanduser().resolve().parent)).as_posix()
    except ValueError:
        return str(target)
