"""Evaluation: pass@k / pass^k, intervals and tests, per-env tables, trace analysis, reports."""
