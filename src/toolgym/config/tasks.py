"""The dataset commands' settings: `toolgym tasks build` (a dataset version and where it goes),
`toolgym tasks validate` (replay workers and an optional teacher check) and `toolgym tasks import` (the
source format and, for tau2-bench, how its tasks map).

Both extend the dataset layer's own models, so a default lives in one place: `tasks build` is
`BuildConfig` (also the pipeline's `tasks.build:` section) plus `out`, and the validate command's teacher
section is `TeacherRollouts` plus the server to ask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import Field

from toolgym.config.base import Section, one_of
from toolgym.dataset.build import BuildConfig
from toolgym.dataset.validate import TeacherConfig, TeacherRollouts

ImportFormat = Literal["fleet", "tau2"]


class TasksBuildConfig(BuildConfig):
    """`toolgym tasks build`: generate tasks from every app's families, split them, check for leaks, write the
    dataset (tasks.jsonl and manifest.json)."""

    out: str = "data/tasks"
    """Output folder for tasks.jsonl and manifest.json."""

    def build_config(self) -> BuildConfig:
        """The dataset's own settings (what its manifest records), without where it is written."""
        return self.part(BuildConfig)


class ValidateTeacher(TeacherRollouts):
    """An optional teacher check after replay: a model served at an OpenAI-compatible URL (its key from
    $OPENAI_API_KEY) must solve each kept task at least once."""

    url: str | None = None
    """OpenAI-compatible base URL of a teacher model (with teacher.model; default: no teacher check)."""
    model: str | None = None
    """Teacher model name served at teacher.url."""

    def teacher_config(self) -> TeacherConfig | None:
        """The teacher check to run (None without a URL and a model)."""
        if self.url is None or self.model is None:
            return None
        return TeacherConfig(policy=f"openai:{self.url}#{self.model}",
                             **self.model_dump(include=set(TeacherRollouts.model_fields)))


class TasksValidateConfig(Section):
    """`toolgym tasks validate`: replay every task's reference solution in a fresh env and keep the tasks that
    score reward 1 (then, with a teacher, those it solves)."""

    out: str | None = None
    """Output folder (default: DATASET's folder/validated)."""
    workers: int | None = Field(None, ge=1)
    """Replay processes (default: CPU cores)."""
    teacher: ValidateTeacher = Field(default_factory=ValidateTeacher)


class TasksImportConfig(Section):
    """`toolgym tasks import FILE`: turn Fleet task records or tau2-bench tasks into toolgym tasks (tasks.jsonl,
    errors.jsonl and manifest.json); env, write_tools and splits apply to format tau2 only."""

    out: Path | None = None
    """Output folder for tasks.jsonl, errors.jsonl and manifest.json (required: a flag or the file gives it)."""
    format: ImportFormat = "fleet"
    """Source format: fleet records (a JSON array or JSONL) or a tau2-bench tasks.json."""
    env: str | None = None
    """tau2: environment name of the tasks (default: the scenario's domain, e.g. airline)."""
    write_tools: list[str] | None = None
    """tau2: tools that change the database; checks that no other write happened (tau2's DB basis)."""
    splits: Path | None = None
    """tau2: split_tasks.json (default: the one beside FILE, if any); train → train, test → heldout_tasks."""

    _known_format = one_of("format", get_args(ImportFormat), "--format {value!s}: use fleet or tau2")
