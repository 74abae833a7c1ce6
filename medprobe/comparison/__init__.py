"""`medprobe compare`: two or more runs (or profiles) side by side, paired on identical items.

    inputs = read_inputs(["a.json", "b.json"])    # results JSONs or profile folders (medprobe.comparison.inputs)
    comparison = compare(inputs, intersect=False, resamples=1000, seed=0)
    print(markdown(comparison))                   # medprobe.comparison.report

The first input is the reference; every other input is compared with it, and a difference is
always `run - reference` (positive: the run scores higher). Each comparison pairs the per-item
outcomes the two runs wrote beside their results JSONs (`.outcomes.jsonl`, checked against the
sha256 the JSON names) with `medprobe.stats.paired`: the difference of every overall metric both
runs report, its paired-bootstrap 95% interval and a two-sided p (the exact McNemar test of medprobe.mcnemar
where both runs score each item 0 or 1, else the paired permutation test; named beside it); then,
for the task's headline metric, the same for each group (relation, disease, task) on that
group's items alone, with Holm-adjusted p-values over the groups of the comparison.

Profiles (folders with profile.json) are compared run by run: one comparison per
benchmark/config/prober that both profiles ran; floors (MST's scratch run) and failed runs are
left out and listed.

Runs are paired on identical items only. Refused (UserError, exit 2, one line saying what
differs): different tasks or splits; settings that change what a metric means (a task's
`paired_settings` in medprobe.registry, e.g. MedLAMA's candidate set); different data (config or
content fingerprint) or different items (the subset's id digest) unless `intersect`, which pairs
the items both runs hold with the same id and content, and says how many of each run's that is.

The package: `inputs` reads what is compared (through medprobe.records), `pairing` decides which runs pair
and on which items, `compare` computes the differences, `report` writes the tables, forest plot and HTML
page, and `outputs` is the command (its output files and checks).
"""
