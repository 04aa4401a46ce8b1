"""How a customer understands the agent's instructions: phrases -> the user-side tool call they mean.

A scripted user simulator reads an app's `user_actions` to turn "Please turn off airplane mode"
into `toggle_airplane_mode(enabled=false)` deterministically (regexes over one lower-cased clause),
and an instructing oracle agent reads `say` to phrase a reference solution's user-side calls. Both
directions live here, beside the device tools, so a new device tool comes with its vocabulary.

Contract (read by `toolgym.agent.users`): each action has `tool`, fixed `arguments`, `patterns`
(any one recognises the instruction), `slots` (argument -> value -> alias regexes found in the same
clause; `multi` names the slot that may take several values at once) and `say` (the canonical
instruction, formatted with `say_values`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolgym.envs import kit

TEXTS = kit.module_texts(__file__)

_THE = r"(?:the\s+|your\s+|phone's\s+|the\s+phone's\s+)?"
_ON_VERBS = r"(?:turn|switch|toggle|flip|set|put)"


@dataclass(frozen=True)
class UserAction:
    """One thing a customer can be asked to do on their phone, and how they recognise the request."""

    tool: str
    patterns: tuple[str, ...]
    say: str
    arguments: dict[str, Any] = field(default_factory=dict)
    slots: dict[str, dict[Any, tuple[str, ...]]] = field(default_factory=dict)
    say_values: dict[str, dict[Any, str]] = field(default_factory=dict)
    multi: str | None = None
    done: str = ""  # what the customer says after doing it, formatted like `say`


def _switch(feature: str, on: bool) -> tuple[str, ...]:
    """Regexes for 'turn X on' / 'turn on X' / 'enable X' (or the off forms) for a feature regex."""
    state, verbs = ("on", r"(?:enable|activate|allow)") if on else ("off", r"(?:disable|deactivate)")
    done = "enabled|turned on" if on else "disabled|turned off"
    return (
        rf"\b{_ON_VERBS}\s+{_THE}{feature}\s+(?:back\s+)?{state}\b",
        rf"\b{_ON_VERBS}\s+(?:back\s+)?{state}\s+{_THE}{feature}",
        rf"\b{verbs}\s+{_THE}{feature}",
        rf"\b(?:make sure|ensure)\s+(?:that\s+)?{_THE}{feature}\s+(?:is\s+)?(?:{state}|{done})\b",
    )


def _toggle(tool: str, feature: str, label: str, on: bool, where: str = "on your phone") -> UserAction:
    """A switch the customer flips on or off: its recognisers, the instruction and the reply share one label."""
    state = "on" if on else "off"
    return UserAction(tool, _switch(feature, on), f"Please turn {state} {label} {where}.", arguments={"enabled": on},
                      done=f"I turned {state} {label}.")


AIRPLANE = r"(?:airplane|aeroplane|flight)\s+mode"
MOBILE_DATA = r"(?:mobile|cellular)\s+data"
DATA_ROAMING = r"(?:data\s+roaming|roaming\s+(?:switch|toggle|setting))"

APP_SLOT = TEXTS["APP_SLOT"]
PERMISSION_SLOT = TEXTS["PERMISSION_SLOT"]
MODE_SLOT = TEXTS["MODE_SLOT"]
MODE_LABEL = {"5g_4g_3g": "5G/4G/3G", "4g_3g": "4G/3G (LTE)", "3g_only": "3G only", "2g_only": "2G only"}

USER_ACTIONS: tuple[UserAction, ...] = (
    _toggle("toggle_airplane_mode", AIRPLANE, "airplane mode", False),
    _toggle("toggle_airplane_mode", AIRPLANE, "airplane mode", True),
    _toggle("toggle_mobile_data", MOBILE_DATA, "mobile data", True),
    _toggle("toggle_mobile_data", MOBILE_DATA, "mobile data", False),
    _toggle("toggle_data_roaming", DATA_ROAMING, "data roaming", True, where="in your phone's settings"),
    _toggle("toggle_data_roaming", DATA_ROAMING, "data roaming", False, where="in your phone's settings"),
    UserAction("reset_apn_settings", (
        r"\b(?:reset|restore)\b[^.?!;]*\b(?:apn|access point)",
        r"\b(?:apn|access point)[^.?!;]*\b(?:reset|back to (?:the )?defaults?|to (?:the )?defaults?)\b",
    ), "Please reset your APN settings to the default.",
        done="I reset the APN settings."),
    UserAction("view_apn_settings", (
        r"\b(?:check|look at|open|view|read|go to|tell me)\b[^.?!;]*\b(?:apn|access point)",
        r"\bwhat (?:is|are|does) (?:your|the) (?:apn|access point)",
    ), "Please open your APN settings and tell me what they show.",
        done="I opened the APN settings."),
    UserAction("reseat_sim_card", (
        r"\b(?:re-?seat|re-?insert|take out|pop out|pull out|remove)\b[^.?!;]*\bsim\b",
        r"\bsim\b[^.?!;]*\b(?:re-?seat|re-?insert|back in)\b",
    ), "Please take out your SIM card and reinsert it.",
        done="I took the SIM card out and put it back in."),
    UserAction("grant_app_permission", (
        r"\b(?:grant|allow|give|enable|turn on)\b[^.?!;]*\b(?:permissions?|access)\b",
    ), "Please grant the {app} app the {permission} permission.",
        slots={"app": APP_SLOT, "permission": PERMISSION_SLOT}, multi="permission",
        done="I granted the {permission} permission to the {app} app."),
    UserAction("list_app_permissions", (
        r"\b(?:check|look at|view|list|see|open|tell me)\b[^.?!;]*\bpermissions?\b",
        r"\bwhat permissions\b",
    ), "Please check which permissions the {app} app has.", slots={"app": APP_SLOT},
        done="I checked the {app} app's permissions."),
    UserAction("set_network_mode", (
        r"\b(?:set|change|switch|put)\b[^.?!;]*\b(?:network mode|network type|preferred network)\b",
        r"\b(?:network mode|network type|preferred network)\b[^.?!;]*\b(?:to|on)\b",
    ), "Please set your preferred network mode to {mode}.", slots={"mode": MODE_SLOT}, say_values={"mode": MODE_LABEL},
        done="I set the network mode to {mode}."),
    UserAction("run_speed_test", (r"\bspeed ?test\b",), "Please run a speed test on your phone.",
               done="I ran a speed test."),
    UserAction("check_device_status", (
        r"\b(?:device|phone) status\b",
        r"\bstatus bar\b",
        r"\bsignal\b",
        r"\bwhat (?:does|do) (?:your|the) (?:phone|screen|device|status)\b",
        r"\b(?:check|look at)\s+(?:your|the)\s+(?:phone|screen|device)\b",
        r"\bis (?:it|everything|your (?:data|internet|phone|service|mms)|the internet|mobile data|mms) (?:now )?(?:working|back)\b",
        r"\b(?:does|did) (?:it|that|this) (?:work|help|fix)\b",
        r"\brestart (?:your|the) (?:phone|device)\b",
    ), "Please check your device status and tell me what you see.",
        done="I checked my phone."),
)
