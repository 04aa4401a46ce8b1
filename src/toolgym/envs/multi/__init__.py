"""Multi-app environments: apps composed over the shared population, and task families that need them all.

A composition is named by its apps joined with '+' ("mail+drive"); `make_env` builds that name into
one Environment whose tools are the union of the apps' tools (no two apps may define the same tool
name) and whose diff names tables 'app.table'. Each module here defines the task
families (`FAMILIES`) of one composition, whose apps are the parts of its name; every family's
verifier checks each composed app: a `diff_only` over all apps' changes plus row checks on the rows
each app should hold.

Splits: a composition that contains a held-out environment (e.g. `mail`) is held out as a whole
(`heldout_env`), since its tasks would otherwise teach that app's tools in training; the others are
split like single apps (train / heldout_tasks by a hash of the task id).
"""

from __future__ import annotations

from toolgym.envs.multi.base import Composition, MultiTaskFamily, Unusable, Worlds
from toolgym.envs.registry import load_registered

# environment name -> module defining the composition's `FAMILIES`, in build order
COMPOSITION_MODULES: dict[str, str] = {
    "mail+drive": "toolgym.envs.multi.mail_drive",
    "mail+maps": "toolgym.envs.multi.mail_maps",
    "tracker+code_host": "toolgym.envs.multi.tracker_code_host",
}

_loaded: dict[str, Composition] = {}


def composition_names() -> list[str]:
    return list(COMPOSITION_MODULES)


def get_composition(name: str) -> Composition:
    return load_registered(COMPOSITION_MODULES, _loaded, "composition", name,
                           lambda module: Composition(tuple(name.split("+")), module.FAMILIES))


__all__ = [
    "COMPOSITION_MODULES",
    "Composition",
    "MultiTaskFamily",
    "Unusable",
    "Worlds",
    "composition_names",
    "get_composition",
]
