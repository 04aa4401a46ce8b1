"""Pre-training of the tiny default model on a generic synthetic tool-use corpus."""
