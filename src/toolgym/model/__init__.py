"""Models that ship with toolgym: the tiny Qwen3 default (`toolgym.model.tiny`)."""
