"""The corpus itself: which skill each episode exercises, drawn from a per-episode random stream."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator

from toolgym.model.pretrain.corpus.episode import CorpusEpisode
from toolgym.model.pretrain.corpus.skills_act import (
    skill_chain,
    skill_copy_call,
    skill_impossible,
    skill_relative_date,
)
from toolgym.model.pretrain.corpus.skills_copy import skill_echo, skill_transcribe
from toolgym.model.pretrain.corpus.skills_read import (
    skill_context_user,
    skill_count,
    skill_lookup_answer,
    skill_search_select,
)

SKILLS: dict[str, tuple[Callable[[random.Random], CorpusEpisode], float]] = {
    "echo": (skill_echo, 0.03),
    "transcribe": (skill_transcribe, 0.08),
    "copy_call": (skill_copy_call, 0.18),
    "lookup_answer": (skill_lookup_answer, 0.10),
    "search_select": (skill_search_select, 0.26),
    "relative_date": (skill_relative_date, 0.10),
    "chain": (skill_chain, 0.14),
    "context_user": (skill_context_user, 0.07),
    "impossible": (skill_impossible, 0.08),
    "count": (skill_count, 0.07),
}


def episode_rng(seed: int, index: int) -> random.Random:
    """Each episode has its own stream, so episode i is the same whatever was generated before."""
    digest = hashlib.sha256(f"toolgym-pretrain/{seed}/{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# The first episodes of the corpus are mostly verbatim copying: with the copy circuit in place the
# other skills start at once; without it, every copied value waits on a long plateau.
CURRICULUM_EPISODES = 4000
CURRICULUM_WEIGHTS: dict[str, float] = {"echo": 1.0, "transcribe": 0.2}


def generate_episode(seed: int, index: int, weights: dict[str, float] | None = None,
                     curriculum_episodes: int = 0) -> CorpusEpisode:
    """Episode `index` of the corpus of `seed`; indices below `curriculum_episodes` use CURRICULUM_WEIGHTS."""
    rng = episode_rng(seed, index)
    if index < curriculum_episodes:
        weights = {**(weights or {}), **CURRICULUM_WEIGHTS}
    names = list(SKILLS)
    w = [(weights or {}).get(n, SKILLS[n][1]) for n in names]
    skill = rng.choices(names, weights=w)[0]
    return SKILLS[skill][0](rng)


def generate_corpus(seed: int, count: int, start: int = 0, weights: dict[str, float] | None = None,
                    curriculum_episodes: int = 0) -> Iterator[CorpusEpisode]:
    for index in range(start, start + count):
        yield generate_episode(seed, index, weights, curriculum_episodes)
