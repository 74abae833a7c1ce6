"""The official builds of the benchmarks: the data files `medprobe build` writes from the official sources.

    OFFICIAL_DATA["medlama"].files["hard/test/test-00000-of-00001-53e4913acbc0893d.parquet"]   # its sha256

A run records the sha256 of every data file it read (`data_fingerprint["files"]`, named
`<config>/<split>/<file>` as medprobe.provenance names them). A run read official data when each of
those files is a file of its benchmark's official build, byte for byte; then a record says "official
data, verified", and otherwise names the files that differ (medprobe.hub.official). Fingerprints are
hashes of files: committing them publishes nothing of the licensed data.

How each was made (scripts/official_fingerprints.py makes them again and prints this table;
tests/test_official_data.py checks that a build gives them):
- medlama: `medprobe build medlama --data-dir DIR`, DIR holding the MedLAMA release files at
  cambridgeltl/medlama@8a314d11c3b8538a7ec522f668b7fbe0394caa9d (2021AA full and hard, prompts.csv);
- mst: `medprobe build mst`, the seeded generator with its default sizes and seed;
- context_variance: `medprobe build context_variance`, the seeded builder on its shipped corpus (a synthetic
  sample, not the paper's corpus: "official" here means the build medprobe ships).
Parquet bytes depend on the writer (pyarrow, datasets); a build with other versions may write other bytes for the
same rows, and its runs then show as "other data" with the files named. The versions are the ones the
project pins in its CI (datasets 5.2, pyarrow 26).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OfficialData:
    """The official build of one benchmark: where it comes from, in words, and its data files' sha256."""

    source: str
    files: dict[str, str] = field(default_factory=dict)  # `<config>/<split>/<file>` -> sha256


def listed(text: str) -> dict[str, str]:
    """`<file> <sha256>` lines as {file: sha256}."""
    return dict(line.split() for line in text.strip().splitlines())


MEDLAMA = OfficialData(
    "MedLAMA 2021AA, built by `medprobe build medlama` from the release files (cambridgeltl/medlama@8a314d1)",
    listed(
        """
full/test/test-00000-of-00001-138cbd6ba1c19174.parquet 138cbd6ba1c1917498695ebe2b951289d19669ee4db1ec83fb0c84c5ca4db4ac
hard/test/test-00000-of-00001-53e4913acbc0893d.parquet 53e4913acbc0893d42dc3801a18125c00f2c9f435644f5e2667df44660b8f090
variants/test/test-00000-of-00001-27acb02c0243e211.parquet 27acb02c0243e21168abd933f507156b7b1daf5035967d053162e0814c35dbbe
"""
    ),
)

MST = OfficialData(
    "MST as `medprobe build mst` generates it (seeded generator, default sizes)",
    listed(
        """
argminmax/test/test-00000-of-00001-795b8a340d52a1fd.parquet 795b8a340d52a1fd00d9c4d8cfe0cf85395dbc64fcc4a8f4063c6bcc4a4408f5
argminmax/train/train-00000-of-00001-b8f380d443b6e7f7.parquet b8f380d443b6e7f7afc60036e7fa3f143f7bd7c4e1c18e5f6067670ea3c1077d
argminmax/validation/validation-00000-of-00001-f88a052497aef667.parquet f88a052497aef6675b5b7009e64158799bd0f68df3a0ba27617cf29cf66b7552
comparison/test/test-00000-of-00001-e6bdcf4f7d7ce45a.parquet e6bdcf4f7d7ce45ae93b3ca6ae5852cee45791777b2f8b88ddb785f3ca12ceab
comparison/train/train-00000-of-00001-2c97449edf1bd75b.parquet 2c97449edf1bd75bdeab99d7cdecb7518b1a823af24a2fe9739c02a40e45e840
comparison/validation/validation-00000-of-00001-2976879d107d213f.parquet 2976879d107d213fc54c941b8ae791933131a48c38e81df014f68796ad6fb54d
reference_range/test/test-00000-of-00001-254aa500543b997c.parquet 254aa500543b997cb96c5b8d090d5b5ccef4e656d456b306a28b2f80ccd51e1f
reference_range/train/train-00000-of-00001-856c9987cfbaf877.parquet 856c9987cfbaf877bd7ef1bd4029462687e10191f2d603fc1ebec3c7332995f1
reference_range/validation/validation-00000-of-00001-cf013f163ea23970.parquet cf013f163ea23970560edf5f61ebbbe3b0746cf0339c63d1b83227ebeb0d3f18
sorting/test/test-00000-of-00001-5c4d324943b9832a.parquet 5c4d324943b9832a03584ec98f039dd8c792f24605b503eea434a8d196cb1cdc
sorting/train/train-00000-of-00001-776814a67eeb9e91.parquet 776814a67eeb9e914e04a2656eaecd4740ac38c9c8861bca28b39b79e2929784
sorting/validation/validation-00000-of-00001-1866bfd5b1500b72.parquet 1866bfd5b1500b729e12611b81a8fa2c897be5741b3220a782dc25976d7ff06b
unit_conversion/test/test-00000-of-00001-41162f37be191d47.parquet 41162f37be191d470dfd41c0dc6d7109af4ef1252bd24c19835a7392c9c8e143
unit_conversion/train/train-00000-of-00001-536168b52dc03c58.parquet 536168b52dc03c581e30336cab31e82611f298d22c970e944047c99c1c5b6e1e
unit_conversion/validation/validation-00000-of-00001-afeea9fac4370c6e.parquet afeea9fac4370c6e86ca406e3aa0bb1a0b522694e0d0fa5e2ff606ba91aa109d
"""
    ),
)

CONTEXT_VARIANCE = OfficialData(
    "context variance as `medprobe build context_variance` builds it from its shipped sample corpus (seeded)",
    listed(
        """
knowledge_only-negative/test/test-00000-of-00001-9bcbe895d8769bef.parquet 9bcbe895d8769bef09f51440a107b7f76aca6b8164d9142e616a44893325c0a4
knowledge_only-target/test/test-00000-of-00001-b6925ec54939caea.parquet b6925ec54939caea105266209977ffd71c853e4dbcdd0d633b3455a083bc0680
knowledge_random-negative/test/test-00000-of-00001-1de88ea76f446e39.parquet 1de88ea76f446e395f79cd554e98ec849fcc3a77ffbfb1ea7637c2e8b1a1bb60
knowledge_random-target/test/test-00000-of-00001-ebde1b485bdb187b.parquet ebde1b485bdb187bdd2e85ea6729eee52367f18c64b6957e04e76d26b024f8b1
knowledge_sorted-negative/test/test-00000-of-00001-a6fdf8ed750ca56e.parquet a6fdf8ed750ca56ec2161526f50fc0d2f70177b5643b68d20bae52eca11ce2eb
knowledge_sorted-target/test/test-00000-of-00001-f2e534b2026029a8.parquet f2e534b2026029a88b0a886fbb2a1a4d8ad3f16182b7e592a55825108ec8295c
real-negative/test/test-00000-of-00001-427de6f8c239dd2c.parquet 427de6f8c239dd2c40d617462bcc326d452037b19d19a0556b78322db9a4830b
real-target/test/test-00000-of-00001-8cb947a0da8edb42.parquet 8cb947a0da8edb42b59b081d15d3ddfd309ab60184b70d701760b7f0b66774fe
"""
    ),
)

# by benchmark (the registry's TaskEntry.official_data names these)
OFFICIAL_DATA: dict[str, OfficialData] = {"medlama": MEDLAMA, "mst": MST, "context_variance": CONTEXT_VARIANCE}
