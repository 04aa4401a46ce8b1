"""A recipe's `threads` holds from the first weight on: the initial (planted) weights are the same bits
whatever thread count the process had, so a rebuild does not depend on the machine's core count."""

from __future__ import annotations

from pathlib import Path

import torch

from toolgym.model.pretrain.recipe import TinyRecipe, _initial_model, build_recipe_tokenizer


def _weights(recipe: TinyRecipe, tokenizer: object, folder: Path, process_threads: int) -> dict[str, torch.Tensor]:
    torch.set_num_threads(process_threads)
    model = _initial_model(recipe, tokenizer, folder)
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def test_initial_weights_do_not_depend_on_the_process_thread_count(tmp_path: Path) -> None:
    before = torch.get_num_threads()
    recipe = TinyRecipe(tokenizer_episodes=200, vocab_size=600)  # the default's width, where threading matters
    tokenizer = build_recipe_tokenizer(recipe)
    try:
        one = _weights(recipe, tokenizer, tmp_path / "one", 1)
        two = _weights(recipe, tokenizer, tmp_path / "two", 2)
    finally:
        torch.set_num_threads(before)
    assert torch.get_num_threads() == before  # the pin is undone after the build
    assert one.keys() == two.keys()
    different = [name for name in one if not torch.equal(one[name], two[name])]
    assert different == []
