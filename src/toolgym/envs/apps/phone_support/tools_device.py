"""User-side tools of phone_support (dual control): the settings of the phone in the customer's hand.

Every tool here is `owner="user"`: the environment refuses them to the agent with an error naming
the owner, so the agent has to instruct the customer, and a user simulator performs them. "Your
phone" is the device on the primary line of the logged-in customer's account. Results describe
what the customer sees on screen, never the hidden cause by name.
"""

from __future__ import annotations

from typing import Any, Literal

from toolgym.envs import ToolContext, ToolError, tool
from toolgym.envs.apps.phone_support.rules import (
    APP_PERMISSIONS,
    DEFAULT_APN,
    DEFAULT_MMSC,
    NETWORK_MODES,
    device_status,
    speed_test,
)

AppName = Literal["messages", "camera", "maps"]
Permission = Literal["sms", "storage", "camera", "location"]
NetworkMode = Literal["5g_4g_3g", "4g_3g", "3g_only", "2g_only"]


def my_device(ctx: ToolContext) -> dict[str, Any]:
    """The phone in the logged-in customer's hand: the device on their account's primary line."""
    username = ctx.env.require_user()
    row = ctx.one(
        "SELECT d.* FROM devices d JOIN lines l ON l.id = d.line_id JOIN accounts a ON a.id = l.account_id "
        "JOIN users u ON u.id = a.user_id WHERE u.username = ? AND l.is_primary = 1",
        (username,),
    )
    if row is None:
        raise ToolError(f"the logged-in user {username!r} has no phone on this carrier")
    return row


def _set(ctx: ToolContext, device_id: int, column: str, value: Any) -> None:
    ctx.db.execute(f"UPDATE devices SET {column} = ? WHERE id = ?", (value, device_id))


def _toggle(ctx: ToolContext, column: str, label: str, enabled: bool) -> dict[str, Any]:
    device = my_device(ctx)
    before = bool(device[column])
    _set(ctx, device["id"], column, int(enabled))
    state = "on" if enabled else "off"
    note = f"{label} was already {state}" if before == enabled else f"{label} is now {state}"
    return {"done": note, "status": device_status(ctx.db, device["id"])}


@tool(owner="user")
def check_device_status(ctx: ToolContext) -> dict[str, Any]:
    """Look at your phone's status: service, signal bars, network type, mobile data, internet and MMS."""
    return device_status(ctx.db, my_device(ctx)["id"])


@tool(owner="user")
def toggle_airplane_mode(ctx: ToolContext, enabled: bool) -> dict[str, Any]:
    """Turn your phone's airplane mode on or off (on cuts every radio).

    Args:
        enabled: true to turn airplane mode on, false to turn it off.
    """
    return _toggle(ctx, "airplane_mode", "airplane mode", enabled)


@tool(owner="user")
def toggle_mobile_data(ctx: ToolContext, enabled: bool) -> dict[str, Any]:
    """Turn your phone's mobile (cellular) data switch on or off.

    Args:
        enabled: true to turn mobile data on, false to turn it off.
    """
    return _toggle(ctx, "mobile_data", "mobile data", enabled)


@tool(owner="user")
def toggle_data_roaming(ctx: ToolContext, enabled: bool) -> dict[str, Any]:
    """Turn your phone's data-roaming switch on or off (needed for data abroad, besides roaming on the line).

    Args:
        enabled: true to allow data while roaming, false to block it.
    """
    return _toggle(ctx, "data_roaming", "data roaming", enabled)


@tool(owner="user")
def view_apn_settings(ctx: ToolContext) -> dict[str, Any]:
    """Open your phone's APN (access point) settings and read them."""
    device = my_device(ctx)
    return {"apn_name": device["apn_name"], "mmsc": device["apn_mmsc"]}


@tool(owner="user")
def reset_apn_settings(ctx: ToolContext) -> dict[str, Any]:
    """Reset your phone's APN settings to the carrier defaults."""
    device = my_device(ctx)
    _set(ctx, device["id"], "apn_name", DEFAULT_APN)
    _set(ctx, device["id"], "apn_mmsc", DEFAULT_MMSC)
    return {"done": "APN settings reset to default", "apn_name": DEFAULT_APN, "mmsc": DEFAULT_MMSC,
            "status": device_status(ctx.db, device["id"])}


@tool(owner="user")
def reseat_sim_card(ctx: ToolContext) -> dict[str, Any]:
    """Power off, take the SIM card out, put it back in firmly, and power on again."""
    device = my_device(ctx)
    if device["sim_status"] == "loose":
        _set(ctx, device["id"], "sim_status", "seated")
    status = device_status(ctx.db, device["id"])
    return {"done": "SIM card removed and reinserted; phone restarted", "sim": status["sim"], "status": status}


@tool(owner="user")
def list_app_permissions(ctx: ToolContext, app: AppName) -> dict[str, Any]:
    """See which permissions one app on your phone has been granted.

    Args:
        app: The app: 'messages', 'camera' or 'maps'.
    """
    if app not in APP_PERMISSIONS:
        raise ToolError(f"argument 'app' must be one of {', '.join(APP_PERMISSIONS)}; got {app!r}")
    device = my_device(ctx)
    rows = ctx.query(
        "SELECT permission, granted FROM app_permissions WHERE device_id = ? AND app = ? ORDER BY permission",
        (device["id"], app),
    )
    return {"app": app, "permissions": {r["permission"]: "granted" if r["granted"] else "denied" for r in rows}}


@tool(owner="user")
def grant_app_permission(ctx: ToolContext, app: AppName, permission: Permission) -> dict[str, Any]:
    """Grant one permission to an app on your phone (Settings > Apps > the app > Permissions).

    Args:
        app: The app: 'messages', 'camera' or 'maps'.
        permission: The permission: 'sms', 'storage', 'camera' or 'location'.
    """
    if app not in APP_PERMISSIONS:
        raise ToolError(f"argument 'app' must be one of {', '.join(APP_PERMISSIONS)}; got {app!r}")
    if permission not in APP_PERMISSIONS[app]:
        raise ToolError(
            f"argument 'permission': the {app} app does not use {permission!r}; it asks for "
            f"{', '.join(APP_PERMISSIONS[app])}"
        )
    device = my_device(ctx)
    row = ctx.one(
        "SELECT id, granted FROM app_permissions WHERE device_id = ? AND app = ? AND permission = ?",
        (device["id"], app, permission),
    )
    assert row is not None, "every phone has every app's permission rows"
    if row["granted"]:
        return {"done": f"{app} already had the {permission} permission"}
    ctx.db.execute("UPDATE app_permissions SET granted = 1 WHERE id = ?", (row["id"],))
    return {"done": f"granted {permission} to {app}", "status": device_status(ctx.db, device["id"])}


@tool(owner="user")
def set_network_mode(ctx: ToolContext, mode: NetworkMode) -> dict[str, Any]:
    """Choose your phone's preferred network mode.

    Args:
        mode: '5g_4g_3g' (fastest, 5G phones only), '4g_3g' (LTE), '3g_only' or '2g_only'.
    """
    if mode not in NETWORK_MODES:
        raise ToolError(f"argument 'mode' must be one of {', '.join(NETWORK_MODES)}; got {mode!r}")
    device = my_device(ctx)
    if mode == "5g_4g_3g" and not device["supports_5g"]:
        raise ToolError(f"argument 'mode': this phone ({device['model']}) does not support 5G; the fastest mode is '4g_3g'")
    _set(ctx, device["id"], "network_mode", mode)
    return {"done": f"preferred network mode set to {mode}", "status": device_status(ctx.db, device["id"])}


@tool(owner="user")
def run_speed_test(ctx: ToolContext) -> dict[str, Any]:
    """Run a speed test on your phone's mobile connection."""
    return speed_test(ctx.db, my_device(ctx)["id"])


USER_TOOLS = [
    check_device_status,
    toggle_airplane_mode,
    toggle_mobile_data,
    toggle_data_roaming,
    view_apn_settings,
    reset_apn_settings,
    reseat_sim_card,
    list_app_permissions,
    grant_app_permission,
    set_network_mode,
    run_speed_test,
]
