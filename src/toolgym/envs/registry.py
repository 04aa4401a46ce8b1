"""Which apps exist, and how an environment name ("mail" or "mail+drive") becomes an Environment."""

from __future__ import annotations

import importlib

from toolgym.envs.app import App
from toolgym.envs.environment import Environment

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


def get_app(name: str) -> App:
    if name not in APP_MODULES:
        raise KeyError(f"unknown app {name!r}; known apps: {', '.join(APP_MODULES)}")
    if name not in _loaded:
        _loaded[name] = importlib.import_module(APP_MODULES[name]).APP
    return _loaded[name]


def make_env(name: str) -> Environment:
    """An Environment for one app or several joined by '+'."""
    return Environment([get_app(part) for part in name.split("+")])
