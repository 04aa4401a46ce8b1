"""Which apps exist, and how an environment name ("mail" or "mail+drive") becomes an Environment."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TypeVar

from toolgym.envs.app import App
from toolgym.envs.environment import Environment

T = TypeVar("T")

# name -> module path of the app (each module defines `APP`, an App instance)
APP_MODULES: dict[str, str] = {
    "booking": "toolgym.envs.apps.booking",
    "code_host": "toolgym.envs.apps.code_host",
    "mail": "toolgym.envs.apps.mail",
    "forum": "toolgym.envs.apps.forum",
    "drive": "toolgym.envs.apps.drive",
    "tracker": "toolgym.envs.apps.tracker",
    "tickets": "toolgym.envs.apps.tickets",
    "homes": "toolgym.envs.apps.homes",
    "crm": "toolgym.envs.apps.crm",
    "maps": "toolgym.envs.apps.maps",
    "phone_support": "toolgym.envs.apps.phone_support",
}

_loaded: dict[str, App] = {}


def app_names() -> list[str]:
    return list(APP_MODULES)


def load_registered(modules: dict[str, str], loaded: dict[str, T], kind: str, name: str,
                    build: Callable[[ModuleType], T]) -> T:
    """`build(module)` of the module registered as `name`, imported on first use and kept in `loaded`,
    so listing names stays cheap and an unknown name is an error that lists the known ones."""
    if name not in modules:
        raise KeyError(f"unknown {kind} {name!r}; known {kind}s: {', '.join(modules)}")
    if name not in loaded:
        loaded[name] = build(importlib.import_module(modules[name]))
    return loaded[name]


def get_app(name: str) -> App:
    return load_registered(APP_MODULES, _loaded, "app", name, lambda module: module.APP)


def make_env(name: str) -> Environment:
    """An Environment for one app or several joined by '+'."""
    return Environment([get_app(part) for part in name.split("+")])
