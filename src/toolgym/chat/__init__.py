"""Chat text in and out of a model: prompts through the tokenizer's own template, and tool calls parsed
from what it wrote. Both the episode loop (`agent`) and the policies and servers (`policy`) use them, so
they live below both."""
