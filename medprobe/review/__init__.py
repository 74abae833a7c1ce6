"""Expert review of a ranking run (MedLAMA §5.3): blinded rating sheets out, validated ratings in.

    medprobe review export RUN --sample 50 --top-k 10 --raters 2 --out DIR   # medprobe.review.sheets
    medprobe review import DIR filled/*.csv                                   # medprobe.review.ratings, .report

- `scale`: the 1-5 scale and its definitions (the MedLAMA paper's).
- `sheets`: a seeded sample of a run's queries, their top-K predictions shuffled and blinded, one CSV
  and one Label Studio import per rater, a Label Studio labelling config and a manifest with hashes.
- `ratings`: reads filled CSV sheets and Label Studio JSON exports, all checked before anything is used.
- `agreement`: quadratic-weighted Cohen's kappa (two raters), interval Krippendorff's alpha (more).
- `report`: acc@k under gold, expert acceptance and both; the rating x in-gold matrix; erratum
  candidates; review.json, review.md and an SVG heatmap; the one line `compare` and `publish` show.

numpy only (and `datasets`, lazily, to read the run's queries at export).
"""
