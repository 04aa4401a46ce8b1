"""The GRPO family's algorithm pieces, each a small registered function: losses (`losses.py`), advantage
baselines (`advantages.py`) and the registry that names them (`registry.py`), so that config validation and
the trainer share one list of options. A new loss, baseline or aggregation is one registered function.
"""
