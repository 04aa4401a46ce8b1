"""toolgym: train LLM agents to use tools across realistic app environments, and prove what training did."""

__version__ = "0.1.0"
