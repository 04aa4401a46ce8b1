"""The phone_support rules every part shares: carrier defaults, codes, and what a phone shows.

`device_status` is the single place that turns device settings plus line/account state into what
the user sees (service, network, internet, MMS). Tools, task generators (to pick scenarios and
predict the fixed state) and the scripted user's stop condition all read it, so they cannot disagree.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from toolgym.envs import kit

TEXTS = kit.module_texts(__file__)

HOME_COUNTRY = "United States"
DEFAULT_APN = "fastnet"
DEFAULT_MMSC = "http://mms.fastnet.example/mms"

# Apps on every phone and the permissions each one asks for. MMS needs both of the messages app's.
APP_PERMISSIONS = TEXTS["APP_PERMISSIONS"]
MMS_PERMISSIONS = ("sms", "storage")

NETWORK_MODES = ("5g_4g_3g", "4g_3g", "3g_only", "2g_only")
NETWORK_TYPE = {"5g_4g_3g": "5G", "4g_3g": "LTE", "3g_only": "3G", "2g_only": "2G"}

TOPUP_PRICES: dict[int, int] = {1: 10, 3: 25, 5: 35}
SUSPEND_REASONS = ("lost_or_stolen", "customer_request")


def digits_of(phone_number: str) -> str:
    """The 11 digits of a US number however it is written ('+1-212-555-0101', '(212) 555 0101')."""
    digits = "".join(ch for ch in phone_number if ch.isdigit())
    return "1" + digits if len(digits) == 10 else digits


def payment_reference(payment_id: int) -> str:
    return f"PAY-{payment_id:06d}"


def escalation_ticket(escalation_id: int) -> str:
    return f"ESC-{escalation_id:05d}"


def best_network_mode(supports_5g: int) -> str:
    """The fastest mode a phone supports: what a slow-data fix should set."""
    return "5g_4g_3g" if supports_5g else "4g_3g"


def data_allowance_gb(plan_data_gb: int | None, topup_gb: int) -> int | None:
    """The cycle's allowance: the plan's GB plus top-ups; None means unlimited."""
    return None if plan_data_gb is None else plan_data_gb + topup_gb


def data_exhausted(plan_data_gb: int | None, topup_gb: int, used_gb: float) -> bool:
    allowance = data_allowance_gb(plan_data_gb, topup_gb)
    return allowance is not None and used_gb >= allowance


def _on_off(flag: int) -> str:
    return "on" if flag else "off"


def device_status(db: sqlite3.Connection, device_id: int) -> dict[str, Any]:
    """What the phone shows right now: the observable symptoms, never the hidden cause's name."""
    row = db.execute(
        "SELECT d.*, l.status AS line_status, l.roaming_enabled, l.data_used_gb, l.topup_gb, p.data_gb "
        "FROM devices d JOIN lines l ON l.id = d.line_id JOIN plans p ON p.id = l.plan_id WHERE d.id = ?",
        (device_id,),
    ).fetchone()
    if row is None:
        raise KeyError(f"no device {device_id}")
    d = dict(row)
    abroad = d["location_country"] != HOME_COUNTRY
    sim = {"seated": "ok", "loose": "no SIM card detected", "damaged": "SIM card error"}[d["sim_status"]]
    if d["airplane_mode"]:
        service = "off (airplane mode)"
    elif d["sim_status"] != "seated":
        service = "no service"
    elif d["line_status"] != "active" or (abroad and not d["roaming_enabled"]):
        service = "emergency calls only"
    else:
        service = "ok"
    connected = service == "ok"
    network_type = "none"
    if connected:
        mode = d["network_mode"]
        network_type = "LTE" if mode == "5g_4g_3g" and not d["supports_5g"] else NETWORK_TYPE[mode]
    if not connected:
        internet = "no connection"
    elif not d["mobile_data"]:
        internet = "off (mobile data is off)"
    elif abroad and not d["data_roaming"]:
        internet = "off (data roaming is off)"
    elif d["apn_name"] != DEFAULT_APN:
        internet = "not working (connected, but pages do not load)"
    elif data_exhausted(d["data_gb"], d["topup_gb"], d["data_used_gb"]):
        internet = "blocked (text from carrier: data allowance used up)"
    else:
        internet = "working"
    granted = {
        r[0] for r in db.execute(
            "SELECT permission FROM app_permissions WHERE device_id = ? AND app = 'messages' AND granted = 1",
            (device_id,),
        ).fetchall()
    }
    mms_ok = internet == "working" and d["apn_mmsc"] == DEFAULT_MMSC and set(MMS_PERMISSIONS) <= granted
    return {
        "airplane_mode": _on_off(d["airplane_mode"]),
        "sim": sim,
        "service": service,
        "signal_bars": d["signal_bars"] if connected else 0,
        "network_type": network_type,
        "roaming": f"yes ({d['location_country']})" if abroad and connected else "no",
        "mobile_data": _on_off(d["mobile_data"]),
        "data_roaming": _on_off(d["data_roaming"]),
        "internet": internet,
        "mms": "working" if mms_ok else "not working",
    }


def speed_test(db: sqlite3.Connection, device_id: int) -> dict[str, Any]:
    """A deterministic speed test: the network type and signal decide the numbers."""
    status = device_status(db, device_id)
    if status["internet"] != "working":
        return {"result": "failed: no internet connection", "internet": status["internet"]}
    bars = int(status["signal_bars"])
    download = {"5G": 150.0 + 25 * bars, "LTE": 30.0 + 10 * bars, "3G": 2.0 + 0.5 * bars, "2G": 0.1}[
        status["network_type"]
    ]
    return {
        "result": "ok",
        "network_type": status["network_type"],
        "download_mbps": download,
        "upload_mbps": round(download / 5, 1),
        "signal_bars": bars,
    }
