"""Settings and device: radios, do-not-disturb, volume, brightness, permissions.

The ``device`` table holds one row per setting (``{"name", "value"}``) so settings
diff and hash like any other rows. Airplane mode cuts the network: it blocks every
tool that requires ``network`` and switches Wi-Fi and Bluetooth off, as phones do.
"""

from __future__ import annotations

from typing import Any

from generators.phone.tools import PhoneError, params, requirement_check, tool
from generators.phone.world import World

APP = "settings"
DEFAULTS: dict[str, Any] = {
    "wifi": True,
    "bluetooth": False,
    "airplane_mode": False,
    "mobile_data": True,
    "do_not_disturb": False,
    "volume_ring": 60,
    "volume_media": 50,
    "volume_alarm": 70,
    "brightness": 60,
    "battery_saver": False,
    "flashlight": False,
}
PERMISSIONS = ("contacts", "calendar", "sms", "phone", "location", "microphone", "camera", "storage")
STREAMS = ["ring", "media", "alarm"]


def install(world: World, settings: dict[str, Any] | None = None, denied: tuple[str, ...] = ()) -> None:
    """Add the device and permissions tables with defaults, overridden by ``settings``."""
    device = world.add_table("device", key="name", app=APP)
    for name, value in {**DEFAULTS, **(settings or {})}.items():
        device.insert({"name": name, "value": value})
    perms = world.add_table("permissions", key="permission", app=APP)
    for p in PERMISSIONS:
        perms.insert({"permission": p, "granted": p not in denied})


def setting(world: World, name: str) -> Any:
    """The current value of a device setting."""
    return world.table("device").readable()[name]["value"]


def _set(world: World, name: str, value: Any) -> dict[str, Any]:
    row = world.table("device").rows[name]
    previous, row["value"] = row["value"], value
    return {"setting": name, "value": value, "previous": previous}


def network_available(world: World) -> bool:
    """Whether any network path is up: Wi-Fi, or mobile data outside airplane mode."""
    if setting(world, "airplane_mode"):
        return bool(setting(world, "wifi"))  # Wi-Fi may be switched back on in flight
    return bool(setting(world, "wifi") or setting(world, "mobile_data"))


@requirement_check("network")
def _require_network(world: World, _: str) -> None:
    if "device" in world.tables and not network_available(world):
        hint = "turn airplane mode off or switch Wi-Fi on, then retry"
        raise PhoneError("NETWORK_UNAVAILABLE", "no network connection", retryable=True, hint=hint)


@requirement_check("permission")
def _require_permission(world: World, perm: str) -> None:
    table = world.tables.get("permissions")
    row = table.peek(perm) if table else None
    if row is not None and not row["granted"]:
        hint = f"the user must grant the {perm} permission (device_grant_permission)"
        raise PhoneError("PERMISSION_DENIED", f"the {perm} permission is not granted", hint=hint)


_ENABLED = {"enabled": {"type": "boolean", "description": "true to switch on, false to switch off"}}


@tool("device_get_settings", APP, "read", "Read all device settings (radios, sound, display).")
def get_settings(world: World) -> dict[str, Any]:
    return {name: row["value"] for name, row in sorted(world.table("device").readable().items())}


@tool("device_check_connectivity", APP, "read", "Report whether the phone is online and through what.")
def check_connectivity(world: World) -> dict[str, Any]:
    via = None
    if network_available(world):
        via = "wifi" if setting(world, "wifi") else "mobile"
    return {"online": via is not None, "via": via, "airplane_mode": setting(world, "airplane_mode")}


@tool("device_set_wifi", APP, "write", "Switch Wi-Fi on or off.", params(["enabled"], **_ENABLED))
def set_wifi(world: World, enabled: bool) -> dict[str, Any]:
    return _set(world, "wifi", enabled)


@tool("device_set_bluetooth", APP, "write", "Switch Bluetooth on or off.", params(["enabled"], **_ENABLED))
def set_bluetooth(world: World, enabled: bool) -> dict[str, Any]:
    return _set(world, "bluetooth", enabled)


@tool("device_set_airplane_mode", APP, "write",
      "Switch airplane mode on or off. Switching it on also turns Wi-Fi and Bluetooth off "
      "(they can be switched back on afterwards); switching it off leaves them as they are.",
      params(["enabled"], **_ENABLED))
def set_airplane_mode(world: World, enabled: bool) -> dict[str, Any]:
    result = _set(world, "airplane_mode", enabled)
    if enabled:
        _set(world, "wifi", False)
        _set(world, "bluetooth", False)
    return result


@tool("device_set_mobile_data", APP, "write", "Switch mobile data on or off.", params(["enabled"], **_ENABLED))
def set_mobile_data(world: World, enabled: bool) -> dict[str, Any]:
    return _set(world, "mobile_data", enabled)


@tool("device_set_do_not_disturb", APP, "write", "Switch do-not-disturb on or off.", params(["enabled"], **_ENABLED))
def set_do_not_disturb(world: World, enabled: bool) -> dict[str, Any]:
    return _set(world, "do_not_disturb", enabled)


@tool("device_set_battery_saver", APP, "write", "Switch battery saver on or off.", params(["enabled"], **_ENABLED))
def set_battery_saver(world: World, enabled: bool) -> dict[str, Any]:
    return _set(world, "battery_saver", enabled)


@tool("device_set_flashlight", APP, "write", "Switch the flashlight on or off.", params(["enabled"], **_ENABLED))
def set_flashlight(world: World, enabled: bool) -> dict[str, Any]:
    return _set(world, "flashlight", enabled)


@tool("device_set_volume", APP, "write", "Set the volume (0-100) of one sound stream.",
      params(["stream", "level"], stream={"type": "string", "enum": STREAMS},
             level={"type": "integer", "minimum": 0, "maximum": 100}))
def set_volume(world: World, stream: str, level: int) -> dict[str, Any]:
    return _set(world, f"volume_{stream}", level)


@tool("device_set_brightness", APP, "write", "Set the screen brightness (0-100).",
      params(["level"], level={"type": "integer", "minimum": 0, "maximum": 100}))
def set_brightness(world: World, level: int) -> dict[str, Any]:
    return _set(world, "brightness", level)


@tool("device_grant_permission", APP, "write", "Grant an app permission (asks the user on a real phone).",
      params(["permission"], permission={"type": "string", "enum": list(PERMISSIONS)}), sensitive="grants a permission")
def grant_permission(world: World, permission: str) -> dict[str, Any]:
    world.table("permissions").rows[permission]["granted"] = True
    return {"permission": permission, "granted": True}
