"""The embedded tiny model: a byte-level BPE tokenizer trained locally and a small Qwen3 network.

Everything is built here from seeded inputs (no hub, no network): the tokenizer from text of the
env suite plus seeded Faker text, the weights from `torch.manual_seed(seed)`. The same arguments
and the same installed apps give the same files.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from faker import Faker
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from toolgym.chat.render import DONE_TOOL_NAME, MODEL_CONFIG_FILE, PROMPT_STYLES, PromptStyle, system_prompt
from toolgym.model.pretrain.settings import check_shape
from toolgym.schema import ToolCall, ToolSpec
from toolgym.schema.documents import read_json

logger = logging.getLogger(__name__)

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Qwen's tags: single tokens so calls are cheap to emit, but not "special" so decoding keeps them.
TAG_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
CHAT_TEMPLATE_PATH = Path(__file__).with_name("tiny_chat_template.jinja")
DEFAULT_CONTEXT_LENGTH = 4096

# Qwen2/3's split: contractions, words with one leading non-letter, single digits, punctuation runs
# with their newlines, newline runs, other whitespace. Single digits help copying numbers.
PRETOKENIZE_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

_FAMILY_DRAWS = 12  # task drafts drawn per task family for the corpus
_ROWS_PER_TABLE = 25
_CORPUS_DATES = (dt.date(2024, 1, 1), dt.date(2027, 12, 31))
_RESULT_CHARS = 1500  # long tool results add little vocabulary: keep their start


def chat_template() -> str:
    return CHAT_TEMPLATE_PATH.read_text(encoding="utf-8")


def _call_text(call: ToolCall) -> str:
    return f'<tool_call>\n{{"name": "{call.name}", "arguments": {json.dumps(call.arguments, ensure_ascii=False)}}}\n</tool_call>'


def _turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


def _faker_corpus(seed: int) -> Iterator[str]:
    """Generic English, names, emails, dates and JSON records: a base for any app's text."""
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    for _ in range(1250):
        yield _turn("user", fake.sentence(nb_words=rng.randint(6, 16)))
        yield _turn("assistant", fake.sentence(nb_words=rng.randint(6, 16)))
    for _ in range(600):
        first, last = fake.first_name(), fake.last_name()
        yield f"{first} {last} <{first.lower()}.{last.lower()}@example.com> {fake.city()}, {fake.company()}"
    for _ in range(600):
        date = fake.date_between_dates(date_start=_CORPUS_DATES[0], date_end=_CORPUS_DATES[1])  # not "today"-relative
        record = {
            "id": rng.randint(1, 5000),
            "title": fake.sentence(nb_words=4).rstrip("."),
            "owner": fake.user_name(),
            "date": date.isoformat(),
            "weekday": date.strftime("%A"),
            "status": rng.choice(["open", "closed", "pending", "confirmed", "cancelled", "done"]),
            "amount": round(rng.uniform(1, 2000), 2),
            "done": rng.random() < 0.5,
        }
        yield json.dumps(rng.choice([record, [record], {"results": [record], "count": 1}]), separators=(", ", ": "))


def _app_corpus(name: str, seed: int) -> Iterator[str]:
    """Tool schemas, policy, task prompts, reference calls and their JSON results of one app."""
    from toolgym.envs import get_app, make_env
    from toolgym.envs.database import user_tables

    app = get_app(name)
    specs: list[ToolSpec] = [t.spec for t in app.tools]
    yield app.policy
    for spec in specs:
        yield json.dumps(spec.to_openai(), ensure_ascii=False)
        yield spec.signature()
    world = app.world()
    for table in user_tables(world.db):
        for row in world.query(f'SELECT * FROM "{table}" LIMIT {_ROWS_PER_TABLE}'):
            yield json.dumps(row, ensure_ascii=False, default=str, separators=(", ", ": "))
    env = make_env(name)
    rng = random.Random(f"{seed}/{name}")
    for family in app.task_families():
        for _ in range(_FAMILY_DRAWS):
            draft = family.generate(rng, world)
            if draft is None:
                continue
            style = rng.choice(PROMPT_STYLES)
            turns = [_turn("system", system_prompt(app.policy, draft.env_variables, specs, style)), _turn("user", draft.prompt)]
            env.reset(draft.env_variables)
            for call in draft.reference_solution:
                result = env.call_tool(call.name, call.arguments).content[:_RESULT_CHARS]
                turns.append(_turn("assistant", _call_text(call)))
                turns.append(_turn("user", f"<tool_response>\n{result}\n</tool_response>"))
            turns.append(_turn("assistant", draft.expected_answer or "Done."))
            yield "".join(turns)
    env.close()


def suite_corpus(seed: int = 0) -> Iterator[str]:
    """Text of the env suite (every registered app that imports) plus seeded generic text.

    An app that is missing or broken is skipped with a log line: the tokenizer still builds.
    """
    from toolgym.envs import app_names

    yield chat_template()
    yield _call_text(ToolCall(name=DONE_TOOL_NAME, arguments={"answer": "Done."}))
    yield from _faker_corpus(seed)
    for name in app_names():
        try:
            yield from list(_app_corpus(name, seed))
        except Exception as exc:  # an app under construction must not stop the tokenizer build
            logger.warning("tokenizer corpus: skipping app %r (%s: %s)", name, type(exc).__name__, exc)


def build_tokenizer(
    corpus: Iterable[str] | None = None, vocab_size: int = 4000, pretokenize_pattern: str = PRETOKENIZE_PATTERN
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on `corpus` (default: `suite_corpus()`), with ChatML and Qwen's tags.

    `<|im_start|>`, `<|im_end|>`, `<|endoftext|>` are special (eos = <|im_end|>, pad = <|endoftext|>);
    the tool/think tags are single added tokens that are not special, so decoding keeps them.
    `pretokenize_pattern` splits text before BPE (the pre-trained default model passes one that keeps
    words apart from their leading space, so a copied value has the same tokens everywhere).
    """
    reserved = len(SPECIAL_TOKENS) + len(TAG_TOKENS) + 256
    if vocab_size <= reserved:
        raise ValueError(f"vocab_size must exceed {reserved} (bytes + special tokens); got {vocab_size}")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pretokenize_pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[*SPECIAL_TOKENS, *TAG_TOKENS],  # reserves ids 0..8 in this order
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    texts = list(corpus) if corpus is not None else list(suite_corpus())
    tokenizer.train_from_iterator(texts, trainer=trainer)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAG_TOKENS])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        extra_special_tokens=list(SPECIAL_TOKENS),
        model_max_length=DEFAULT_CONTEXT_LENGTH,
    )
    wrapped.chat_template = chat_template()
    return wrapped


def _check_shape(hidden_size: int, layers: int, heads: int, kv_heads: int, prompt_style: str) -> None:
    if prompt_style not in PROMPT_STYLES:
        raise ValueError(f"prompt_style must be one of {', '.join(PROMPT_STYLES)}; got {prompt_style!r}")
    check_shape(hidden_size, layers, heads, kv_heads)


def init_tiny(
    out_dir: str | Path,
    *,
    hidden_size: int = 128,
    layers: int = 4,
    heads: int = 4,
    kv_heads: int = 2,
    seed: int = 0,
    prompt_style: PromptStyle = "compact",
    context_length: int = DEFAULT_CONTEXT_LENGTH,
    vocab_size: int = 4000,
    tokenizer: PreTrainedTokenizerFast | None = None,
    rope_theta: float = 10000.0,
) -> Path:
    """Write a randomly initialised Qwen3ForCausalLM + tokenizer + toolgym.json to `out_dir`.

    Loads back with AutoModelForCausalLM / AutoTokenizer from the folder, offline.
    """
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    _check_shape(hidden_size, layers, heads, kv_heads, prompt_style)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer if tokenizer is not None else build_tokenizer(vocab_size=vocab_size)
    tok.model_max_length = context_length
    eos_id = tok.convert_tokens_to_ids(EOS_TOKEN)
    pad_id = tok.convert_tokens_to_ids(PAD_TOKEN)
    config = Qwen3Config(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        intermediate_size=3 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden_size // heads,
        max_position_embeddings=context_length,
        rope_parameters={"rope_type": "default", "rope_theta": rope_theta},
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=[eos_id, pad_id], pad_token_id=pad_id)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    settings: dict[str, Any] = {"prompt_style": prompt_style, "context_length": context_length}
    (out / MODEL_CONFIG_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return out


def random_init_like(model_dir: str | Path, out_dir: str | Path, *, seed: int = 0) -> Path:
    """A copy of a model folder with fresh random weights: the same config, tokenizer and prompt style.

    The control for a pre-trained base: train both the same way, and the difference is the base's.
    """
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    source, out = Path(model_dir), Path(out_dir)
    if not (source / "config.json").is_file():
        raise ValueError(f"{source} is not a model folder (no config.json)")
    out.mkdir(parents=True, exist_ok=True)
    config = AutoConfig.from_pretrained(source)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(out)
    for item in source.iterdir():  # tokenizer, chat template, generation config, toolgym.json
        if item.is_file() and item.suffix != ".safetensors" and item.name not in ("config.json", "MODEL_CARD.md",
                                                                                   MODEL_CONFIG_FILE):
            shutil.copy2(item, out / item.name)
    settings = read_json(source / MODEL_CONFIG_FILE) if (
        source / MODEL_CONFIG_FILE).is_file() else {}
    settings.pop("pretrain", None)  # these weights were not pre-trained
    settings["random_init"] = {"like": str(source), "seed": seed}
    (out / MODEL_CONFIG_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return out
