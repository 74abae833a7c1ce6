"""Building a benchmark into a Hub-ready folder (Parquet + card) and rendering its dataset card.

Imports run one way: `medprobe.hub` (publishing) and `medprobe.export` read what is built here; nothing
here imports them.
"""
