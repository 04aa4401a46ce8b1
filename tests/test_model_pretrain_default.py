"""The shipped default model: small, loadable offline, documented, and built by the recipe it names."""

from __future__ import annotations

import json

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from toolgym.chat.parse import get_parser
from toolgym.chat.render import Renderer, load_prompt_style
from toolgym.model.pretrain.corpus import generate_episode
from toolgym.model.pretrain.recipe import DEFAULT_MODEL_DIR, TinyRecipe, read_pretrain_settings
from toolgym.model.pretrain.render import tokenize_episode

MAX_WEIGHT_BYTES = 15 * 1024 * 1024


def test_default_checkpoint_is_small_safetensors() -> None:
    weights = DEFAULT_MODEL_DIR / "model.safetensors"
    assert weights.is_file()
    assert weights.stat().st_size <= MAX_WEIGHT_BYTES
    assert not list(DEFAULT_MODEL_DIR.glob("*.bin"))


def test_default_loads_with_auto_classes_offline() -> None:
    model = AutoModelForCausalLM.from_pretrained(DEFAULT_MODEL_DIR, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR, local_files_only=True)
    assert model.config.model_type == "qwen3"
    assert next(model.parameters()).dtype == torch.float32
    assert model.config.vocab_size == len(tokenizer)
    assert load_prompt_style(DEFAULT_MODEL_DIR) == "compact"


def test_model_card_states_the_corpus_and_how_to_rebuild() -> None:
    card = (DEFAULT_MODEL_DIR / "MODEL_CARD.md").read_text()
    for needed in ("contains no env-suite task", "toolgym model pretrain-tiny", "toolgym model verify-default",
                   "CPU-minutes", "steps"):
        assert needed in card


def test_recorded_recipe_is_complete() -> None:
    pretrain = read_pretrain_settings(DEFAULT_MODEL_DIR)
    recipe = TinyRecipe.model_validate(pretrain["recipe"])
    assert len(pretrain["reference_losses"]) == recipe.verify_steps
    assert pretrain["steps"] == recipe.train.steps
    assert pretrain["cpu_seconds"] > 0


def test_default_has_learned_the_call_format_on_held_out_corpus_episodes() -> None:
    """Greedy continuation of a held-out corpus prompt is a well-formed tool call."""
    model = AutoModelForCausalLM.from_pretrained(DEFAULT_MODEL_DIR, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_MODEL_DIR, local_files_only=True)
    renderer = Renderer(tokenizer, prompt_style="compact")
    parser = get_parser("hermes")
    well_formed = 0
    trials = 8
    for index in range(trials):
        episode = generate_episode(seed=987_654, index=index)
        tokenized = tokenize_episode(episode, renderer)
        prompt = tokenized.input_ids[: tokenized.turn_starts[0]]
        with torch.no_grad():
            output = model.generate(torch.tensor([prompt]), max_new_tokens=80, do_sample=False,
                                    eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
                                    pad_token_id=tokenizer.pad_token_id)
        parsed = parser.parse(tokenizer.decode(output[0, len(prompt):], skip_special_tokens=False))
        # The format, not the choice: picking the right tool of a random app is what SFT teaches
        # (the shipped base names an offered tool in about 1 of 8 of these).
        well_formed += bool(parsed.tool_calls) and not parsed.errors and all(c.name for c in parsed.tool_calls)
    assert well_formed >= trials - 1, f"only {well_formed}/{trials} first turns are well-formed tool calls"


def test_toolgym_json_names_the_compact_style() -> None:
    settings = json.loads((DEFAULT_MODEL_DIR / "toolgym.json").read_text())
    assert settings["prompt_style"] == "compact"
