"""Records that prove themselves: the one reader of results JSONs, their outcomes and the runs of a profile.

    run = load_run("runs/hard.json")          # RecordError (one line, exit 2) unless the record agrees with itself
    run.record.metrics["acc@10"]              # the file's number, recomputed from run.outcomes and found equal
    run.outcomes                              # medprobe.stats.Outcomes: ids, groups, item digests, columns

Every command that reads a run (compare, publish, review, reproduce, profile, the leaderboard) reads it
here. `load_run` reads the JSON (refusing binary, UTF-16 or malformed text with one line), checks that
every file the JSON names (outcomes, predictions, plot) is the one it was written with, and recomputes
every overall metric, its 95% interval and n, and the per-group values, from the per-item outcomes
with the task's estimators (medprobe.stats); a record whose numbers disagree with its own outcomes is
refused, naming the metric and both values.
"""

__all__ = ["LoadedRun", "RecordError", "load_record_file", "load_run", "read_run_outcomes"]


def __getattr__(name: str):
    """The reader's names, imported on first use: importing the record itself (medprobe.records.record, which the
    CLI parsers do) must not import numpy and the estimators with it."""
    if name in __all__:
        from medprobe.records import verify

        return getattr(verify, name)
    raise AttributeError(f"module 'medprobe.records' has no attribute {name!r}")
