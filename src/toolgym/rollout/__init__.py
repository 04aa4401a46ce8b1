"""The rollout engine: concurrent episodes into a durable, resumable results.jsonl."""
