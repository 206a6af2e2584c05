"""Media: a music library, playlists (ordered track lists) and the player's mode."""

from __future__ import annotations

import random
from typing import Any

from generators.phone.tools import PhoneError, params, tool
from generators.phone.world import World

APP = "media"
MODES = ["normal", "shuffle", "repeat_one", "repeat_all"]
LIBRARY = [("Blue Morning", "Nora Vale"), ("City Lights", "The Echoes"), ("Slow River", "Nora Vale"),
           ("Paper Planes", "Kite Club"), ("Midnight Run", "The Echoes"), ("Golden Hour", "Sol Arcade"),
           ("Northern Sky", "Kite Club"), ("Late Train", "Sol Arcade"), ("Quiet Storm", "Mira Lune"),
           ("Open Road", "Mira Lune")]


def install(world: World) -> None:
    """Add the tracks, playlists and player tables."""
    world.add_table("tracks", key="id", app=APP)
    world.add_table("playlists", key="id", app=APP)
    world.add_table("player", key="name", incidental=("position_s",), app=APP)


def seed(world: World, rng: random.Random) -> None:
    """The library, two playlists and a stopped player."""
    for n, (title, artist) in enumerate(LIBRARY, 1):
        world.table("tracks").insert({"id": f"tr-{n:03d}", "title": title, "artist": artist,
                                      "seconds": rng.randint(150, 300)})
    ids = sorted(world.table("tracks").rows)
    for name in ("Morning mix", "Workout"):
        world.table("playlists").insert({"id": world.next_id("pl"), "name": name, "tracks": rng.sample(ids, 4)})
    world.table("player").insert({"name": "player", "playing": None, "mode": "normal", "position_s": 0})


def _playlist(world: World, playlist_id: str) -> dict[str, Any]:
    row = world.table("playlists").get(playlist_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no playlist {playlist_id!r}", hint="find it with playlists_list")
    return row


def _track(world: World, track_id: str) -> dict[str, Any]:
    row = world.table("tracks").get(track_id)
    if row is None:
        raise PhoneError("NOT_FOUND", f"no track {track_id!r}", hint="find it with media_search")
    return row


@tool("media_search", APP, "read", "Search tracks by title or artist.", params(["query"], query={"type": "string"}))
def search(world: World, query: str) -> dict[str, Any]:
    q = query.strip().lower()
    return {"items": [dict(r) for r in world.table("tracks").readable().values()
                      if q and q in f"{r['title']} {r['artist']}".lower()]}


@tool("playlists_list", APP, "read", "List playlists with their tracks in order, optionally those whose name "
      "contains a word.", params(query={"type": "string"}))
def list_playlists(world: World, query: str | None = None) -> dict[str, Any]:
    q = (query or "").strip().lower()
    return {"items": [dict(r) for r in world.table("playlists").readable().values() if q in r["name"].lower()]}


@tool("playlists_create", APP, "write", "Create an empty playlist.", params(["name"], name={"type": "string"}))
def create_playlist(world: World, name: str) -> dict[str, Any]:
    if not name.strip():
        raise PhoneError("INVALID_ARGUMENT", "name is empty")
    return dict(world.table("playlists").insert({"id": world.next_id("pl"), "name": name.strip(), "tracks": []}))


@tool("playlists_add_track", APP, "write", "Add a track at the end of a playlist (or at a 0-based position).",
      params(["playlist_id", "track_id"], playlist_id={"type": "string"}, track_id={"type": "string"},
             position={"type": "integer", "minimum": 0}))
def add_track(world: World, playlist_id: str, track_id: str, position: int | None = None) -> dict[str, Any]:
    row, _ = _playlist(world, playlist_id), _track(world, track_id)
    tracks = list(row["tracks"])
    tracks.insert(len(tracks) if position is None else min(position, len(tracks)), track_id)
    row["tracks"] = tracks
    return dict(row)


@tool("playlists_remove_track", APP, "write", "Remove a track from a playlist.",
      params(["playlist_id", "track_id"], playlist_id={"type": "string"}, track_id={"type": "string"}))
def remove_track(world: World, playlist_id: str, track_id: str) -> dict[str, Any]:
    row = _playlist(world, playlist_id)
    if track_id not in row["tracks"]:
        raise PhoneError("NOT_FOUND", f"{track_id} is not in {row['name']}")
    row["tracks"] = [t for t in row["tracks"] if t != track_id]
    return dict(row)


@tool("media_play", APP, "write", "Play a track or a playlist.",
      params(track_id={"type": "string"}, playlist_id={"type": "string"}))
def play(world: World, track_id: str | None = None, playlist_id: str | None = None) -> dict[str, Any]:
    if (track_id is None) == (playlist_id is None):
        raise PhoneError("INVALID_ARGUMENT", "give exactly one of track_id or playlist_id")
    target = _track(world, track_id)["id"] if track_id else _playlist(world, playlist_id)["id"]
    player = world.table("player").rows["player"]
    player.update(playing=target, position_s=0)
    return dict(player)


@tool("media_pause", APP, "write", "Stop playback.")
def pause(world: World) -> dict[str, Any]:
    player = world.table("player").rows["player"]
    player["playing"] = None
    return dict(player)


@tool("media_set_mode", APP, "write", "Set the playback mode.", params(["mode"], mode={"type": "string", "enum": MODES}))
def set_mode(world: World, mode: str) -> dict[str, Any]:
    player = world.table("player").rows["player"]
    player["mode"] = mode
    return dict(player)
