"""What part of its benchmark a run probed, in words, for `medprobe publish results`.

    subset_phrase(record)                  # "first 10 queries per relation, 190 of 15,329 queries", or None
    subset_phrase(record, quick=profile_quick[b])      # a `medprobe profile --quick` run: "profile --quick: ..., generated with test_size=100"
    subset_config(record)                  # the model-index config: "hard/subset:per_relation=10", or "hard" for a whole run

A run probed a subset when the record says so (`record.subset["subset"]`: an option marked
`subset=True` in the registry was given, e.g. --per-relation or --diseases), when it belongs to a
`medprobe profile --quick` folder (whose subset options and smaller generated data are the quick
settings recorded in profile.json), or when its record predates the `subset` entry (then nobody can
say). `publish results` refuses such runs unless --allow-subset, and then names the subset in the
model-index dataset name and in the card, never the full config's name alone, and gives its results their
own model-index config (`<config>/subset:<option>=<value>,...`), so that nothing that groups results by
config and split (a leaderboard, the Hub's own) puts a subset's numbers beside the whole config's.

MST data generated with other sizes than the builder's defaults, outside --quick, is not a subset:
MST is a generator with no canonical rows, the size of its test split is a property of the dataset
the user built (and publishes under --dataset-id), and the card gives n and the interval of every
number, which is where a small test split shows.
"""

from __future__ import annotations

from medprobe.hub.checks import PublishError
from medprobe.records.record import RunRecord
from medprobe.registry import Option, registry, show_default

ALLOW_SUBSET = "--allow-subset"
UNRECORDED = "not recorded"  # a results file of a medprobe before 0.2: nobody can say what it probed


def option_phrase(option: Option | None, dest: str, value: object) -> str:
    """`first 10 queries per relation` for an option with a `subset_text` and a number, else `per-relation 10`."""
    if option is not None and option.subset_text and isinstance(value, int) and not isinstance(value, bool):
        return option.subset_text.format(value)
    if option is not None and option.subset_text and option.switch and value is True:  # e.g. --only-control-misses
        return option.subset_text
    flag = option.flag.lstrip("-") if option is not None else dest.replace("_", "-")
    return f"{flag} {show_default(value)}"


def scope_phrase(scope: dict) -> str:
    """`190 of 15,329 queries` from a record's subset["of"]."""
    return f"{scope['probed']:,} of {scope['total']:,} {scope['unit']}"


def subset_phrase(record: RunRecord, quick: dict | None = None) -> str | None:
    """The subset `record` probed, in words, or None when it probed the whole config/split.

    `quick`: the --quick settings of the run's benchmark when it comes from a `profile --quick` folder
    (profile.json settings.quick_settings[benchmark], e.g. {"task": {...}, "build": {...}})."""
    subset = record.subset or {}
    if not subset and quick is None:
        return UNRECORDED
    entry = registry().tasks.get(record.task or record.benchmark)
    options = {option.dest: option for option in (entry.options if entry else ())}
    parts = [option_phrase(options.get(dest), dest, value) for dest, value in (subset.get("options") or {}).items()]
    if subset.get("of"):
        parts.append(scope_phrase(subset["of"]))
    if quick is not None:
        build = (quick or {}).get("build") or {}
        if build:
            parts.append("generated with " + ", ".join(f"{key}={value}" for key, value in build.items()))
        return "profile --quick" + (": " + ", ".join(parts) if parts else "")
    if not subset.get("subset"):
        return None
    return ", ".join(parts) or "options not recorded"


def refuse_subsets(found: list[tuple[str, str]], allow: bool) -> None:
    """Stop on the first of `found` ((what, phrase) pairs) unless --allow-subset was given."""
    if not found or allow:
        return
    what, phrase = found[0]
    more = f" (and {len(found) - 1} more run(s))" if len(found) > 1 else ""
    if phrase == UNRECORDED:
        raise PublishError(
            f"{what} does not record which items it probed (a results file of a medprobe before 0.2){more}, so nothing "
            f"shows it probed the whole benchmark; run the probe again, or pass {ALLOW_SUBSET} to publish it labelled "
            f"'subset: {UNRECORDED}'"
        )
    raise PublishError(
        f"{what} probed a subset ({phrase}){more}: its numbers are not the benchmark's; publish a run of the whole "
        f"config, or pass {ALLOW_SUBSET} to publish {'them' if more else 'it'} labelled 'subset: ...'"
    )


def subset_config(record: RunRecord, quick: dict | None = None) -> str | None:
    """The model-index config of the run's results: its config for a whole run; with a subset, the config then
    `/subset:` and what made it a subset in `key=value` form (`hard/subset:per_relation=10`,
    `subset:profile-quick,test_size=100` for a config-less task); `quick` as for `subset_phrase`."""
    if subset_phrase(record, quick) is None:
        return record.config
    subset = record.subset or {}
    parts = [
        f"{dest}={'+'.join(map(str, value)) if isinstance(value, (list, tuple)) else value}"
        for dest, value in (subset.get("options") or {}).items()
    ]
    if quick is not None:
        parts = ["profile-quick", *parts, *(f"{key}={value}" for key, value in ((quick or {}).get("build") or {}).items())]
    elif not subset:
        parts = ["not-recorded"]
    described = "subset:" + (",".join(parts) or "options-not-recorded")
    return f"{record.config}/{described}" if record.config else described
