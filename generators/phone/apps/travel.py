"""Travel, maps and weather: deterministic routes and seeded forecasts; trips.

Routes and forecasts are pure functions of their inputs and the world's seed, so
the same question always gets the same answer in a world. Both need a network.
"""

from __future__ import annotations

import random
from datetime import date
from typing import Any

from generators.phone.timeparse import resolve_date
from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World
from warehouse.ids import digest

APP = "travel"
PLACES = ["Home", "Office", "Airport", "Central Station", "City Gym", "Downtown Clinic", "Cafe Rio", "Riverside Park"]
CITIES = ["Lisbon", "Berlin", "Tokyo", "Chicago", "Nairobi", "Lima", "Oslo", "Seoul"]
MODES = ["driving", "transit", "walking", "cycling"]
SPEED_KMH = {"driving": 32, "transit": 24, "walking": 5, "cycling": 15}
SKIES = ["sunny", "partly cloudy", "cloudy", "rain", "showers", "windy"]


def install(world: World) -> None:
    """Add the trips table."""
    world.add_table("trips", key="id", app=APP)


def seed(world: World, rng: random.Random) -> None:
    """One upcoming trip."""
    city = rng.choice(CITIES)
    day = world.now.date().toordinal() + rng.randint(5, 40)
    world.table("trips").insert({"id": world.next_id("trip"), "city": city, "start": _iso(day),
                                 "end": _iso(day + rng.randint(2, 6)), "hotel": f"Hotel {city} Central"})


def _iso(ordinal: int) -> str:
    return date.fromordinal(ordinal).isoformat()


def _unit(world: World, *key: Any) -> float:
    return int(digest([world.seed, *key], 8), 16) / 16**8


def _place(name: str) -> str:
    for p in PLACES:
        if p.lower() == name.strip().lower():
            return p
    raise PhoneError("NOT_FOUND", f"unknown place {name!r}", hint=f"places: {', '.join(PLACES)}")


@tool("maps_route", APP, "read", "Route between two places: distance and travel time by mode.",
      params(["origin", "destination"], origin={"type": "string"}, destination={"type": "string"},
             mode={"type": "string", "enum": MODES}), ("network",))
def route(world: World, origin: str, destination: str, mode: str = "driving") -> dict[str, Any]:
    a, b = sorted([_place(origin), _place(destination)])
    if a == b:
        raise PhoneError("INVALID_ARGUMENT", "origin and destination are the same place")
    km = round(1.5 + 18 * _unit(world, "route", a, b), 1)
    return {"origin": origin, "destination": destination, "mode": mode, "km": km,
            "minutes": max(1, round(60 * km / SPEED_KMH[mode]))}


@tool("weather_forecast", APP, "read", "Forecast for a city on a date (today up to 7 days ahead).",
      params(["city"], city={"type": "string"}, date={"type": "string"}), ("network",))
def forecast(world: World, city: str, date: str = "today") -> dict[str, Any]:
    name = next((c for c in CITIES if c.lower() == city.strip().lower()), None)
    if name is None:
        raise PhoneError("NOT_FOUND", f"no forecast for {city!r}", hint=f"cities: {', '.join(CITIES)}")
    day = resolve_date(date, world.now)
    ahead = (day - world.now.date()).days
    if not 0 <= ahead <= 7:
        raise PhoneError("INVALID_ARGUMENT", f"{day} is outside the 7-day forecast")
    u = _unit(world, "weather", name, day.isoformat())
    rng = random.Random(u)
    return {"city": name, "date": day.isoformat(), "sky": rng.choice(SKIES), "high_c": round(5 + 25 * u),
            "rain_chance": rng.randrange(0, 101, 10)}


@tool("trips_list", APP, "read", "List booked trips, optionally to one city.", params(city={"type": "string"}))
def list_trips(world: World, city: str | None = None) -> dict[str, Any]:
    c = (city or "").strip().lower()
    return {"items": sorted((dict(r) for r in world.table("trips").readable().values() if c in r["city"].lower()),
                            key=lambda r: r["start"])}


@tool("trips_cancel", APP, "write", "Cancel a booked trip.", params(["trip_id"], trip_id={"type": "string"}), sensitive="deletes")
def cancel_trip(world: World, trip_id: str) -> dict[str, Any]:
    if world.table("trips").get(trip_id) is None:
        raise PhoneError("NOT_FOUND", f"no trip {trip_id!r}", hint="find it with trips_list")
    del world.table("trips").rows[trip_id]
    return {"cancelled": trip_id}
