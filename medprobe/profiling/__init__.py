"""`medprobe profile`: one model, every benchmark that fits it, one knowledge-profile table.

    profile = run_profile(ProfileOptions(model="minilm", out="out/profile", data_dirs={"medlama": "/data/medlama"}))

The model's kind is read from its config (medprobe.models.model_kind): an encoder without a
masked-LM head, a masked LM, a causal LM or a seq2seq LM. What runs for each kind, on which data,
and what `--quick` changes are each benchmark's `ProfilePlan` in the registry (medprobe/profiling/plan.py
reads them); with the built-in benchmarks:

    benchmark          encoder                   masked LM                    causal LM        seq2seq
    medlama full+hard  contrastive               contrastive, mask-average    causal-lm        generative
    mst                mlm-head + scratch floor  mlm-head + scratch floor     skipped          skipped
    context_variance   contrastive (scorer)      mask-average                 causal-lm        skipped
    disknE             pair-classifier (data)    pair-classifier (data)       skipped          skipped

Every pair is one `medprobe.run.run(RunRequest(...))`, the same loop as `medprobe probe`, writing
DIR/runs/<label>.json (and <label>.predictions.jsonl for the tasks that write predictions); the
request of each run is recorded in profile.json with the `medprobe probe` command that repeats it.

Outputs: DIR/profile.json (model, kind, settings, data sources, every run's request and RunRecord,
one headline row per run that is not a floor, the skipped list, the sha256 of every file of the
folder), DIR/profile.md (the table) and DIR/profile.png (each headline against its chance level and
floor). matplotlib is an optional extra: without it the figure is left out, and profile.json and the
printed summary say so (the runs are not lost for want of a plot). The whole folder, runs/ and
datasets/ included, is written beside DIR under a lock and replaces DIR in one swap at the end; DIR
must be new, empty or a profile medprobe wrote (`overwrite` replaces anything); a profile killed
before is resumed, reusing its runs of the same request (medprobe/profiling/folder.py).

Every headline row carries the run's 95% interval and n (`medprobe.stats`) and its chance level,
as the run recorded them (`RunRecord.chance`, e.g. MedLAMA acc@k of a uniformly random order of each
query's candidates), and, where the plan has a floor run (MST: the same architecture with random
weights, `--scratch`), the floor's value.

The package: `plan` decides what runs (from the registry's profile plans), `run` runs it, `folder` writes
the folder (locked, staged, resumable), `profile` is the Profile record and its table, figure and summary.
"""
