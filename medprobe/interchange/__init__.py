"""Runs in other tools' forms: an lm-evaluation-harness output folder read back as medprobe records
(`medprobe import lm-eval`: `lm_eval_run` reads what lm-eval wrote, `lm_eval_import` writes the records).
"""
