"""kit.task_user: the user a task logs in as, and an app extending it with its own fields."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from toolgym.envs.kit.task_user import TaskUser


def test_env_logs_the_user_in_on_the_day() -> None:
    user = TaskUser("amy", "Amy Adams")
    assert user.env(dt.date(2026, 5, 3)) == {
        "CURRENT_DATE": "2026-05-03", "LOGGED_IN_USER": "amy", "LOGGED_IN_NAME": "Amy Adams",
    }


def test_an_app_adds_fields_and_keeps_env_and_immutability() -> None:
    @dataclasses.dataclass(frozen=True)
    class Owner(TaskUser):
        email: str

    owner = Owner("bob", "Bob Brown", "bob@example.com")
    assert owner.env(dt.date(2026, 6, 1))["LOGGED_IN_USER"] == "bob"
    with pytest.raises(dataclasses.FrozenInstanceError):
        owner.name = "Robert"  # type: ignore[misc]
