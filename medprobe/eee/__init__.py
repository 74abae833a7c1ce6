"""Every Eval Ever out: `medprobe export eee` writes runs as that schema's aggregate and instance-level records, built
with the every-eval-ever package's own models and checked by its validator (records.py, items.py, export.py,
folder.py; docs/eee.md says what goes where and what the schema has no place for)."""
