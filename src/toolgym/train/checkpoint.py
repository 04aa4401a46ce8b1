"""Resumable checkpoints (accelerate state + trainer state) and loadable exports (HF model or peft adapter).

A checkpoint is written to `step-N.tmp` and renamed when complete, so a kill mid-save leaves the
previous checkpoint as the latest. With LoRA, checkpoints hold only the adapter (peft's own format,
loadable by `PeftModel.from_pretrained`), not another copy of the base weights.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from toolgym.chat.render import MODEL_CONFIG_FILE
from toolgym.schema.documents import read_json

CHECKPOINTS_DIR = "checkpoints"
STATE_FILE = "trainer_state.json"
ADAPTER_DIR = "adapter"
_STEP_DIR = re.compile(r"^step-(\d+)$")


def checkpoint_path(out_dir: str | Path, step: int) -> Path:
    return Path(out_dir) / CHECKPOINTS_DIR / f"step-{step:08d}"


def list_checkpoints(out_dir: str | Path) -> list[tuple[int, Path]]:
    """Complete checkpoints (their trainer state was written last), oldest first."""
    root = Path(out_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    found = []
    for entry in root.iterdir():
        match = _STEP_DIR.match(entry.name)
        if match and (entry / STATE_FILE).is_file():
            found.append((int(match.group(1)), entry))
    return sorted(found)


def latest_checkpoint(out_dir: str | Path) -> Path | None:
    checkpoints = list_checkpoints(out_dir)
    return checkpoints[-1][1] if checkpoints else None


def changed_since_checkpoint(out_dir: str | Path, previous: dict[str, Any], fields: dict[str, Any],
                             keys: tuple[str, ...]) -> list[str]:
    """Keys whose recorded value differs from this run's, when `out_dir` has a checkpoint to resume.

    A resumed run must be the run that wrote the checkpoint; values compare as canonical JSON.
    """
    if latest_checkpoint(out_dir) is None or not previous:
        return []

    def canonical(value: Any) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    return [k for k in keys if canonical(previous.get(k)) != canonical(fields[k])]


def remove_partial_checkpoints(out_dir: str | Path) -> int:
    """Delete `.tmp` folders a kill left behind; returns how many."""
    root = Path(out_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return 0
    partial = [p for p in root.iterdir() if p.name.endswith(".tmp")]
    for path in partial:
        shutil.rmtree(path, ignore_errors=True)
    return len(partial)


def install_adapter_hooks(accelerator: Any) -> None:
    """Save / load only the LoRA adapter of a peft model in accelerate checkpoints.

    Not under FSDP: there accelerate's own FSDP checkpointing saves the sharded model whole.
    """
    from peft import PeftModel, set_peft_model_state_dict
    from safetensors.torch import load_file

    def save_hook(models: list[Any], weights: list[Any], output_dir: str) -> None:
        for index in reversed(range(len(models))):
            model = accelerator.unwrap_model(models[index])
            if isinstance(model, PeftModel):
                if accelerator.is_main_process:
                    model.save_pretrained(Path(output_dir) / ADAPTER_DIR)
                if weights:
                    weights.pop(index)

    def load_hook(models: list[Any], input_dir: str) -> None:
        for index in reversed(range(len(models))):
            model = accelerator.unwrap_model(models[index])
            if isinstance(model, PeftModel):
                adapter = Path(input_dir) / ADAPTER_DIR / "adapter_model.safetensors"
                result = set_peft_model_state_dict(model, load_file(str(adapter)))
                unexpected = getattr(result, "unexpected_keys", [])
                if unexpected:
                    raise RuntimeError(f"{adapter}: unexpected adapter keys {unexpected[:3]}")
                models.pop(index)

    accelerator.register_save_state_pre_hook(save_hook)
    accelerator.register_load_state_pre_hook(load_hook)


def save_checkpoint(accelerator: Any, out_dir: str | Path, step: int, state: dict[str, Any], keep: int) -> Path:
    """accelerate state (model or adapter, optimizer, scheduler, RNG) + trainer state, atomically."""
    final = checkpoint_path(out_dir, step)
    partial = final.with_name(final.name + ".tmp")
    if accelerator.is_main_process:
        shutil.rmtree(partial, ignore_errors=True)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(partial))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        (partial / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
        _fsync_dir(partial)
        if final.exists():
            shutil.rmtree(final)
        os.replace(partial, final)
        _fsync_dir(final.parent)
        for _, old in list_checkpoints(out_dir)[: -max(keep, 1)]:
            shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()
    return final


def load_checkpoint(accelerator: Any, path: str | Path) -> dict[str, Any]:
    """Restore model/adapter, optimizer, scheduler and RNG states; returns the trainer state."""
    path = Path(path)
    accelerator.load_state(str(path))
    return dict(read_json(path / STATE_FILE))


def _fsync_dir(path: Path) -> None:
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def export_model(model: Any, tokenizer: Any, base_model_dir: str | Path, dest: str | Path,
                 state_dict: dict[str, Any] | None = None) -> Path:
    """A loadable folder: peft adapter (LoRA) or the full HF model + tokenizer + toolgym.json.

    `state_dict` (the gathered full weights of a sharded model) replaces the model's own tensors.
    """
    from peft import PeftModel

    dest = Path(dest)
    partial = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(partial, ignore_errors=True)
    if state_dict is None:
        model.save_pretrained(partial)
    else:
        model.save_pretrained(partial, state_dict=state_dict)
    if not isinstance(model, PeftModel):
        tokenizer.save_pretrained(partial)
        settings = Path(base_model_dir) / MODEL_CONFIG_FILE
        if settings.is_file():
            shutil.copy2(settings, partial / MODEL_CONFIG_FILE)
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(partial, dest)
    return dest


def export_merged(model: Any, tokenizer: Any, base_model_dir: str | Path, dest: str | Path) -> Path:
    """Merge a peft model's adapter into its base and export the full model (the model is merged in place)."""
    merged = model.merge_and_unload()
    return export_model(merged, tokenizer, base_model_dir, dest)


def export_merged_from_adapter(adapter_dir: str | Path, tokenizer: Any, base_model_dir: str | Path,
                               dest: str | Path, dtype: Any = None) -> Path:
    """Merge an exported adapter into a fresh copy of its base (for models whose live weights are sharded)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(base_model_dir), dtype=dtype, local_files_only=True)
    return export_merged(PeftModel.from_pretrained(base, str(adapter_dir)), tokenizer, base_model_dir, dest)
