"""A generic synthetic corpus of tool-use episodes, deterministic from a seed.

Every episode invents its own little app (a domain noun from a field the env suite does not model,
random record fields, random tool names and arguments, a random policy), so a model pre-trained on
it learns the *skills* of tool use — copy an entity into an argument, pick the min/max or a
matching item from a JSON result, turn "next Friday" into a date, chain an id from one call into
the next, follow the system prompt's conventions, stop with an answer that quotes a result — and
none of the suite's tasks, tool names or prompts.

Episodes are messages + ToolSpecs + a policy text; `toolgym.model.pretrain.render` turns them
into the agent's own compact layout. `Mark`s name the assistant spans that measure each skill.
"""

from toolgym.model.pretrain.corpus.episode import CorpusEpisode, Mark
from toolgym.model.pretrain.corpus.generate import (
    CURRICULUM_EPISODES,
    CURRICULUM_WEIGHTS,
    SKILLS,
    episode_rng,
    generate_corpus,
    generate_episode,
)

__all__ = [
    "CURRICULUM_EPISODES",
    "CURRICULUM_WEIGHTS",
    "SKILLS",
    "CorpusEpisode",
    "Mark",
    "episode_rng",
    "generate_corpus",
    "generate_episode",
]
