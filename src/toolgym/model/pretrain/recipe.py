"""`pretrain_tiny`: the whole recipe of the shipped default model, from a seed to a model folder.

Tokenizer (trained on the generic corpus only), network shape and init (`toolgym.model.tiny`),
corpus, schedule and the first losses all live in the folder's `toolgym.json`, so
`verify_default` can rebuild a prefix of the run and check it reproduces.
"""

from __future__ import annotations

import hashlib
import json
import platform
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from pydantic import ValidationError

from toolgym.chat.render import MODEL_CONFIG_FILE, Renderer
from toolgym.cpu_time import cpu_seconds, cpu_since
from toolgym.model import DEFAULT_MODEL_DIR as DEFAULT_MODEL_DIR  # re-exported: defined torch-free
from toolgym.model.pretrain.corpus import SKILLS, generate_corpus
from toolgym.model.pretrain.render import episode_text_plain
from toolgym.model.pretrain.settings import TinyRecipe as TinyRecipe  # re-exported: defined torch-free
from toolgym.model.pretrain.train import (
    EMULATED_BF16_COST,
    StepRecord,
    eval_episodes,
    fast_bf16,
    pinned_threads,
    train,
)
from toolgym.schema.documents import read_json
from toolgym.schema.jsonl import field_path

# Like Qwen2's split, except that a word never carries its leading space or quote: ` Paris` in a
# request and `"Paris"` in a call argument then tokenize to the same `Paris`, so copying a value
# is a plain token copy (with Qwen's split the first token differs, which stalled SFT before).
WORD_ISOLATING_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
TOKENIZER_SEED_OFFSET = 7919  # the tokenizer's text is its own corpus stream, not the training stream
RECIPE_VERSION = 3  # 2: planted copy circuit, context tokens in the loss at 0.3, 500 steps; 3: 1,000 steps


@dataclass
class PretrainReport:
    out: Path
    steps: int
    cpu_seconds: float
    wall_seconds: float
    tokens: int
    supervised_tokens: int
    parameters: int
    final_eval: dict[str, Any]
    losses: list[float]


def tokenizer_corpus(recipe: TinyRecipe) -> list[str]:
    """Rendered generic episodes from their own seed stream: no suite text goes into the vocabulary."""
    episodes = generate_corpus(recipe.seed + TOKENIZER_SEED_OFFSET, recipe.tokenizer_episodes)
    return [episode_text_plain(e) for e in episodes]


def build_recipe_tokenizer(recipe: TinyRecipe) -> Any:
    from toolgym.model.tiny import PRETOKENIZE_PATTERN, build_tokenizer

    pattern = WORD_ISOLATING_PATTERN if recipe.pretokenizer == "word_isolating" else PRETOKENIZE_PATTERN
    return build_tokenizer(tokenizer_corpus(recipe), vocab_size=recipe.vocab_size, pretokenize_pattern=pattern)


def _initial_model(recipe: TinyRecipe, tokenizer: Any, folder: Path) -> Any:
    """init_tiny's folder (config, generation config, tokenizer) and its float32 model."""
    from transformers import AutoModelForCausalLM

    from toolgym.model.pretrain.plant import ROPE_THETA, plant_copy_circuit
    from toolgym.model.tiny import init_tiny

    with pinned_threads(recipe.train.threads):
        init_tiny(
            folder, hidden_size=recipe.hidden_size, layers=recipe.layers, heads=recipe.heads,
            kv_heads=recipe.kv_heads, seed=recipe.seed, prompt_style="compact", context_length=recipe.context_length,
            tokenizer=tokenizer, rope_theta=ROPE_THETA if recipe.planted_copy else 10000.0,
        )
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True)
        if recipe.planted_copy:
            plant_copy_circuit(model, seed=recipe.seed)
    return model


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tokenizer_digest(tokenizer: Any) -> str:
    return sha256_text(tokenizer.backend_tokenizer.to_str())


def save_weights(model: Any, out: Path, dtype: str) -> None:
    """Store weights in `dtype` (bf16 halves the file) while config.json keeps float32 for loading."""
    model.to(getattr(torch, dtype))
    model.save_pretrained(out)
    config_path = out / "config.json"
    config = read_json(config_path)
    config["dtype"] = "float32"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    model.to(torch.float32)


def pretrain_tiny(
    out: str | Path,
    recipe: TinyRecipe | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
    on_eval: Callable[[int, float, dict[str, Any]], None] | None = None,
    snapshot: Callable[[int, Any], None] | None = None,
    snapshot_every: int = 0,
) -> PretrainReport:
    """Build the tokenizer, init the network, pre-train on the generic corpus, write the folder."""
    recipe = recipe or TinyRecipe()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started_cpu, started_wall = cpu_seconds(), time.perf_counter()
    tokenizer = build_recipe_tokenizer(recipe)
    model = _initial_model(recipe, tokenizer, out)
    renderer = Renderer(tokenizer, prompt_style="compact")
    eval_set = eval_episodes(recipe.seed, renderer, recipe.train.eval_episodes, recipe.train.seq_len)
    evals: list[dict[str, Any]] = []

    def record_eval(step: int, cpu_s: float, result: dict[str, Any]) -> None:
        evals.append({"step": step, "cpu_s": round(cpu_s, 1), **result})
        if on_eval:
            on_eval(step, cpu_s, result)

    records = train(model, renderer, recipe.train, on_step, record_eval, eval_set,
                    snapshot=snapshot, snapshot_every=snapshot_every)
    save_weights(model, out, recipe.weights_dtype)
    cpu_total, wall_total = cpu_since(started_cpu), time.perf_counter() - started_wall
    report = PretrainReport(
        out=out, steps=len(records), cpu_seconds=cpu_total, wall_seconds=wall_total,
        tokens=sum(r.tokens for r in records), supervised_tokens=sum(r.supervised for r in records),
        parameters=sum(p.numel() for p in model.parameters()), final_eval=evals[-1] if evals else {},
        losses=[r.loss for r in records],
    )
    settings = read_json(out / MODEL_CONFIG_FILE)
    settings["pretrain"] = {
        "recipe_version": RECIPE_VERSION,
        "recipe": recipe.model_dump(),
        "tokenizer_sha256": tokenizer_digest(tokenizer),
        "reference_losses": [r.loss for r in records[: recipe.verify_steps]],
        "steps": report.steps,
        "tokens": report.tokens,
        "supervised_tokens": report.supervised_tokens,
        "cpu_seconds": round(cpu_total, 1),
        "train_cpu_seconds": round(records[-1].cpu_s, 1) if records else 0.0,
        "wall_seconds": round(wall_total, 1),
        "parameters": report.parameters,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),  # bf16 losses are exact per capability only
        "fast_bf16": fast_bf16(),
        "torch": torch.__version__,
        "evals": evals,
        "loss_every_50": [round(r.loss, 4) for r in records[::50]],
    }
    (out / MODEL_CONFIG_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    (out / "MODEL_CARD.md").write_text(model_card(settings), encoding="utf-8")
    return report


@dataclass
class VerifyResult:
    ok: bool
    steps: int
    max_difference: float
    tokenizer_matches: bool
    expected: list[float]
    observed: list[float]
    message: str


def read_pretrain_settings(model_dir: Path) -> dict[str, Any]:
    path = model_dir / MODEL_CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing; {model_dir} is not a model folder built by pretrain-tiny")
    settings = read_json(path)
    if "pretrain" not in settings:
        raise ValueError(f"{path}: no 'pretrain' section; the folder was not built by pretrain-tiny")
    return settings["pretrain"]


def stored_recipe(pretrain: dict[str, Any], model_dir: Path) -> TinyRecipe:
    """The recipe a folder's toolgym.json records; one this version cannot read is named with its file."""
    try:
        return TinyRecipe.model_validate(pretrain.get("recipe"))
    except ValidationError as exc:
        problems = "; ".join(field_path(("pretrain", "recipe", *e["loc"])) + ": "
                             + e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise ValueError(f"{model_dir / MODEL_CONFIG_FILE}: {problems}") from None


def steps_to_verify(pretrain: dict[str, Any], steps: int | None) -> int:
    """The recorded first steps a verify re-runs: `steps` of them (all when None), at most all."""
    recorded = len(pretrain["reference_losses"])
    return min(steps or recorded, recorded)


def verify_default(
    model_dir: str | Path = DEFAULT_MODEL_DIR, steps: int | None = None, tolerance: float = 1e-4,
    on_step: Callable[[StepRecord], None] | None = None,
) -> VerifyResult:
    """Rebuild the tokenizer and re-run the first `steps` training steps from the seed; compare losses."""
    model_dir = Path(model_dir)
    pretrain = read_pretrain_settings(model_dir)
    recipe = stored_recipe(pretrain, model_dir)
    expected = list(pretrain["reference_losses"])
    count = steps_to_verify(pretrain, steps)
    if count == 0:
        raise ValueError(f"{model_dir / MODEL_CONFIG_FILE}: 'reference_losses' is empty; nothing to verify")
    tokenizer = build_recipe_tokenizer(recipe)
    tokenizer_ok = tokenizer_digest(tokenizer) == pretrain["tokenizer_sha256"]
    with tempfile.TemporaryDirectory(prefix="toolgym-verify-") as scratch:
        model = _initial_model(recipe, tokenizer, Path(scratch))
        renderer = Renderer(tokenizer, prompt_style="compact")
        records = train(model, renderer, recipe.train, on_step=on_step, max_steps=count)
    observed = [r.loss for r in records]
    differences = [abs(a - b) for a, b in zip(expected[:count], observed, strict=True)]
    worst = max(differences)
    ok = tokenizer_ok and worst <= tolerance
    if not tokenizer_ok:
        message = "the rebuilt tokenizer differs from the shipped one (tokenizer_sha256)"
    elif worst > tolerance:
        first_bad = next(i for i, d in enumerate(differences) if d > tolerance)
        message = (f"step {first_bad}: loss {observed[first_bad]:.6f} differs from the recorded "
                   f"{expected[first_bad]:.6f} by {differences[first_bad]:.2e} (tolerance {tolerance:g})")
    else:
        message = f"first {count} steps reproduce the recorded losses (max difference {worst:.2e})"
    # Folders built before fast_bf16 was recorded: the shipped default ran 3.5 CPU-s a step, which
    # only native bf16 does (emulated, a step of its recipe takes ~80 s).
    if not ok and tokenizer_ok and recipe.train.bf16 and pretrain.get("fast_bf16", True) and not fast_bf16():
        message += ("; the losses were recorded where bf16 is native and this CPU emulates it (no AVX-512/AMX "
                    "bf16): the two round differently, so the check is exact only on a CPU like the one that "
                    f"built the model ({pretrain.get('cpu_capability', pretrain.get('machine', 'not recorded'))})")
    return VerifyResult(ok, count, worst, tokenizer_ok, expected[:count], observed, message)


def _skill_table(evaluation: dict[str, Any]) -> str:
    first, exact, counts = evaluation.get("first", {}), evaluation.get("exact", {}), evaluation.get("counts", {})
    rows = ["| skill | first token | whole value | n |", "| --- | --- | --- | --- |"]
    for skill in sorted(first):
        rows.append(f"| {skill} | {first[skill]:.2f} | {exact[skill]:.2f} | {counts.get(skill, 0)} |")
    return "\n".join(rows)


def recipe_rope_theta(recipe: dict[str, Any]) -> float:
    from toolgym.model.pretrain.plant import ROPE_THETA

    return ROPE_THETA if recipe.get("planted_copy") else 10000.0


BF16_NOTE = f"""The losses come from bf16 autocast, so rebuilding and verifying need it too, and they are exact
only on a CPU like the one that recorded them. Where oneDNN has no native bfloat16 (no AVX-512/AMX
bf16, as on AVX2-only CPUs) bf16 is emulated:
{EMULATED_BF16_COST};
`verify-default` then takes about half an hour, its losses round differently (1.4e-4 at step 0), and both commands say so."""


def model_card(settings: dict[str, Any]) -> str:
    """MODEL_CARD.md from the folder's toolgym.json: what it is, what it saw, how to rebuild it."""
    pretrain = settings["pretrain"]
    recipe = pretrain["recipe"]
    train_config = recipe["train"]
    final = pretrain["evals"][-1] if pretrain["evals"] else {}
    skills = ", ".join(SKILLS)
    return f"""# toolgym tiny default model

A {pretrain['parameters'] / 1e6:.2f}M-parameter Qwen3-architecture causal LM ({recipe['layers']} layers,
hidden {recipe['hidden_size']}, {recipe['heads']} heads / {recipe['kv_heads']} KV heads, vocabulary
{recipe['vocab_size']}, context {recipe['context_length']}), pre-trained from scratch on CPU by
`toolgym model pretrain-tiny`. It is a *base* for tool use, not an assistant: fine-tune it (SFT on
oracle trajectories, then GRPO) on the environments you care about.

Loads offline with `AutoModelForCausalLM.from_pretrained(folder)` / `AutoTokenizer.from_pretrained(folder)`.
Weights are stored in {recipe['weights_dtype']} to keep the file small; `config.json` says float32, so
they load as float32 for training. `toolgym.json` holds the prompt style (`compact`) and the recipe.

## Training data: a generic synthetic corpus, no env-suite task

Every episode invents its own app: a domain noun from fields the env suite does not model
(gardens, labs, boats, ...), random record fields, random tool names and signatures, a random
policy text, random people/places/codes from Faker's word lists. Skills ({skills}):
copying entities and values from the request or the context into call arguments, selecting
from JSON tool results by a condition or by min/max of a field, resolving relative dates against
the current date, chaining an id from one result into the next call, "my" = the logged-in user,
refusing with the policy's phrase when nothing matches, counting results, and stopping with an
answer that quotes a result. Episodes are rendered in the agent's compact ChatML layout; the loss
covers assistant turns at weight 1 and the rest of each episode (requests, tool results) at
{train_config['context_weight']}.

## Initial weights: a planted copy circuit

{"The network starts from random init except for a copy (induction) circuit written into layers 0-1 by `toolgym.model.pretrain.plant`: two previous-token heads (1 and 2 back) and a head that finds where the current token (and the one before it) appeared earlier and copies what followed, in the lowest-frequency RoPE planes (rope_theta " + str(int(recipe_rope_theta(recipe))) + "). From random init, content-based copying did not form within the pre-training budget; untrained, the planted model copies about 97% of random chunk repeats. Everything else, the circuit included, is then trained." if recipe.get('planted_copy') else "Random init (no planted circuit)."}

**The corpus contains no env-suite task, task id, task prompt or tool name.** Tests check that
no generated user prompt equals a dataset task prompt, that no task prompt appears anywhere in the
rendered corpus, and that no corpus tool name is an app tool name
(`tests/test_model_pretrain_corpus.py`). The tokenizer is trained on this corpus too (not on suite
text), so rebuilding it does not depend on the apps.

## Run

| | |
| --- | --- |
| seed | {recipe['seed']} |
| steps | {pretrain['steps']} × {train_config['rows']} rows × {train_config['seq_len']} tokens |
| tokens | {pretrain['tokens']:,} ({pretrain['supervised_tokens']:,} supervised) |
| optimizer | AdamW lr {train_config['lr']}, warmup {train_config['warmup_steps']}, constant until {train_config['decay_start']:.0%} of steps, cosine to {train_config['min_lr_ratio']} × lr; wd {train_config['weight_decay']}; betas ({train_config['beta1']}, {train_config['beta2']}); clip {train_config['grad_clip']} |
| precision | bf16 autocast (fp32 master weights), logits only at supervised positions |
| CPU time | {pretrain['cpu_seconds'] / 60:.1f} CPU-minutes in all ({pretrain['train_cpu_seconds'] / 60:.1f} training), {train_config['threads']} thread(s); {pretrain['wall_seconds'] / 60:.1f} wall-minutes on a shared machine |
| machine | {pretrain['machine']}{', ' + pretrain['cpu_capability'] if 'cpu_capability' in pretrain else ''}{'' if pretrain.get('fast_bf16', True) else ' (bf16 emulated)'}, torch {pretrain['torch']} |

Held-out corpus samples at the end (teacher-forced; "first token" = the value's first token is
the argmax, "whole value" = every token of it is):

{_skill_table(final)}

## Rebuild and verify

```
toolgym model pretrain-tiny OUT --seed {recipe['seed']}      # the whole recipe, with a progress bar
toolgym model verify-default                # re-runs the first {recipe['verify_steps']} steps; losses must match to 1e-4
```

{BF16_NOTE}
"""
