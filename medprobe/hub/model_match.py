"""Whether `--model-repo` holds the model a run probed, for `medprobe publish results`.

A results JSON records the model's identity (medprobe.provenance.model_identity): the Hub id and
revision it was loaded from, if any, and the sha256 of each weight file with one digest over them.
Two checks, both refused unless --model-mismatch-ok:

- offline (also under --dry-run): a run that loaded a Hub model names it, and another --model-repo
  is refused; a run that recorded no weights hash cannot be checked at all, and is refused too; and
  a run's weight files are compared with those --model-repo is known to hold without the network
  (`known_weights`): the repo a packaged model is a copy of (medprobe.models.PACKAGED declares its
  files' sizes and sha256), or the repo's snapshot in the local Hub cache (hashed here). A probed file
  that the repo holds with another size or sha256 is refused; one it is not known to hold is left to
  the real publish, and the plan says which;
- on a real publish: the repo's file metadata (`HfApi.model_info(repo, files_metadata=True)`: each
  file's size and, for LFS files, its sha256) must hold every weight file the run loaded (top-level
  *.safetensors, *.bin, *.gguf, as the embedding cache finds them) with the same size and sha256,
  so that the digest over them (`medprobe.digests.combined_digest`) is the run's `weights_sha256`.
  Weight files the repo holds beyond those are allowed (a repo often has both .safetensors and .bin;
  a download keeps one) and said. A repo without weight files cannot be checked: refused.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from medprobe.hub.checks import PublishError

MISMATCH_OK = "--model-mismatch-ok"


@dataclass(frozen=True)
class Probed:
    """A model identity to check and where it was read (a results file, or a run of a profile)."""

    what: str
    identity: dict

    @property
    def files(self) -> dict[str, dict]:
        return self.identity.get("weights") or {}

    def describe(self) -> str:
        where = (
            f"the Hub model {self.identity['hub_id']}" if self.identity.get("hub_id") else f"model {self.identity.get('name')!r}"
        )
        if self.identity.get("revision"):
            where += f" at {self.identity['revision'][:12]}"
        digest = self.identity.get("weights_sha256")
        if not digest:
            return f"{where}, no weights hash recorded"
        return f"{where}, weights sha256 {digest[:12]} over {', '.join(sorted(self.files)) or 'no files'}"


def distinct(probed: list[Probed]) -> list[Probed]:
    """One entry per model identity (a profile's runs all record the same model)."""
    seen: dict[tuple, Probed] = {}
    for item in probed:
        key = (item.identity.get("hub_id"), item.identity.get("weights_sha256"), item.identity.get("name"))
        seen.setdefault(key, item)
    return list(seen.values())


def same_repo(a: str, b: str) -> bool:
    return a.strip("/").lower() == b.strip("/").lower()  # the Hub resolves repo ids case-insensitively


def check_offline(probed: list[Probed], repo_id: str, mismatch_ok: bool) -> None:
    """The refusals that need no network: another Hub id recorded, or no weights hash to compare."""
    if mismatch_ok:
        return
    for item in distinct(probed):
        hub_id = item.identity.get("hub_id")
        if hub_id and not same_repo(hub_id, repo_id):
            raise PublishError(
                f"{item.what} probed the Hub model {hub_id}, not --model-repo {repo_id}: publish to {hub_id}, "
                f"or pass {MISMATCH_OK} if {repo_id} holds the same model"
            )
        if not item.identity.get("weights_sha256"):
            why = item.identity.get("note") or "a results file of a medprobe before 0.2, or a model without weight files"
            raise PublishError(
                f"{item.what} records no weights hash of its model ({why}), so nothing shows that {repo_id} holds the "
                f"model probed: run the probe again with this medprobe, or pass {MISMATCH_OK}"
            )
        same, detail = offline_comparison(item, repo_id)
        if same is False:
            raise PublishError(
                f"{item.what}: --model-repo {repo_id} does not hold the weights that were probed ({detail}); publish to "
                f"the repo of the model you probed, or pass {MISMATCH_OK} if you know it is the same model"
            )


def known_weights(repo_id: str) -> tuple[dict[str, dict], str] | None:
    """({file: {"size", "sha256"}}, where that is known from) of the weight files `repo_id` holds, without the network:
    the declaration of a packaged model copied from it, else its snapshot in the local Hub cache; None if neither."""
    from medprobe.models import PACKAGED
    from medprobe.provenance import hub_snapshot, weights_identity

    for name, packaged in PACKAGED.items():
        if same_repo(packaged.hub_id, repo_id):
            return packaged.weights, f"{packaged.hub_id} at {packaged.revision[:12]} (the packaged {name} is a copy of it)"
    snapshot = hub_snapshot(repo_id)
    weights = weights_identity(snapshot).get("weights") if snapshot is not None else None
    return (weights, f"the local Hub cache's snapshot of {repo_id} at {snapshot.name[:12]}") if weights else None


def offline_comparison(item: Probed, repo_id: str) -> tuple[bool | None, str]:
    """(True: the repo holds every probed weight file, False: it holds one with other bytes, None: not known offline;
    what was compared, in words)."""
    known = known_weights(repo_id)
    if known is None:
        return None, f"{repo_id} is neither the repo of a packaged model nor in the local Hub cache"
    held, where = known
    for name, probed_file in sorted(item.files.items()):
        found = held.get(name)
        if found is not None and (found["size"], found["sha256"]) != (probed_file["size"], probed_file["sha256"]):
            return False, (
                f"{name}: {probed_file['size']:,} B, sha256 {probed_file['sha256'][:12]} probed; {found['size']:,} B, "
                f"sha256 {found['sha256'][:12]} in {where}"
            )
    missing = sorted(set(item.files) - set(held))
    if missing:
        return None, f"{where} lists no {', '.join(missing)}"
    return True, f"{', '.join(sorted(item.files))} equal in {where} (size and sha256)"


def plan_lines(probed: list[Probed], repo_id: str, mismatch_ok: bool) -> list[str]:
    """What the plan says about the model check: what was checked offline and what a real publish checks, and how."""
    if mismatch_ok:
        return [f"  model:   not checked ({MISMATCH_OK}): the numbers go into {repo_id}'s card as they are"]
    lines = []
    for item in distinct(probed):
        lines.append(f"  model:   {item.what}: {item.describe()}")
        if item.identity.get("hub_id"):
            lines.append(f"           checked: it was loaded from the Hub id {item.identity['hub_id']}, which is --model-repo")
        same, detail = offline_comparison(item, repo_id)
        lines.append(f"           {'checked offline' if same else 'not checked offline'}: {detail}")
    names = sorted({name for item in distinct(probed) for name in item.files})
    lines.append(
        f"           a real publish checks: model_info({repo_id!r}, files_metadata=True) lists {', '.join(names)} "
        "with the same size and LFS sha256 (their combined digest = the weights sha256 above); otherwise it stops"
    )
    return lines


def repo_weights(siblings: list[Any] | None, patterns: tuple[str, ...]) -> dict[str, dict]:
    """{file: {"size", "sha256" (None when the Hub gave no LFS sha256)}} of the repo's top-level weight files."""
    found = {}
    for sibling in siblings or []:
        name = sibling.rfilename
        if "/" in name or not any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
            continue
        lfs = sibling.lfs
        found[name] = {"size": lfs.size if lfs else sibling.size, "sha256": lfs.sha256 if lfs else None}
    return found


def check_repo(probed: list[Probed], repo_id: str, info: Any) -> str:
    """Compare each probed identity with the repo's weight files (`info`: model_info with files metadata);
    returns what was checked, or stops with what differs and how to override."""
    from medprobe.digests import WEIGHT_PATTERNS, combined_digest

    held = repo_weights(getattr(info, "siblings", None), WEIGHT_PATTERNS)
    if not held:
        raise PublishError(
            f"cannot check that {repo_id} holds the model probed: the repo has no weight files "
            f"({', '.join(WEIGHT_PATTERNS)}) at its top level; push the model first, or pass {MISMATCH_OK}"
        )
    notes = []
    for item in distinct(probed):
        for name, probed_file in sorted(item.files.items()):
            found = held.get(name)
            if found is None:
                detail = f"the run loaded {name}, which the repo does not have (it has {', '.join(sorted(held))})"
            elif found["sha256"] is None:
                raise PublishError(
                    f"cannot check that {repo_id} holds the model of {item.what}: the Hub gives no LFS sha256 for its "
                    f"{name} (not stored with LFS); pass {MISMATCH_OK} if you know it is the same model"
                )
            elif (found["size"], found["sha256"]) != (probed_file["size"], probed_file["sha256"]):
                detail = (
                    f"{name}: {probed_file['size']:,} B, sha256 {probed_file['sha256'][:12]} probed; "
                    f"{found['size']:,} B, sha256 {found['sha256'][:12]} in the repo"
                )
            else:
                continue
            probed_at = item.identity.get("revision")
            if probed_at and probed_at != getattr(info, "sha", None):  # a Hub model that changed since it was probed
                detail += f"; the run probed revision {probed_at[:12]}, the repo is at {str(info.sha)[:12]}"
            raise PublishError(
                f"{item.what}: --model-repo {repo_id} does not hold the weights that were probed ({detail}); publish "
                f"to the repo of the model you probed, or pass {MISMATCH_OK} if you know it is the same model"
            )
        if combined_digest({name: held[name] for name in item.files}) != item.identity["weights_sha256"]:
            raise PublishError(
                f"{item.what}: its weights sha256 is not the digest of the weight files it lists (the file was edited?); "
                f"run the probe again, or pass {MISMATCH_OK}"
            )
        extra = sorted(set(held) - set(item.files))
        also = f"; the repo also holds {', '.join(extra)}, which the run did not load" if extra else ""
        notes.append(f"{', '.join(sorted(item.files))} of {item.what} equal in {repo_id} (size and sha256){also}")
    return "model checked: " + "; ".join(notes)
