"""The phone screens Label Studio tasks show, served by URL (never base64 in task data).

``GET /{episode_id}/{step}.svg`` renders the screen after that step with the phone's own
renderer (review_app.screens); tasks link to it when ``label_studio.screens_url`` is set.
Read-only: it opens the warehouse and never writes.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from review_app import screens
from review_app.episode import load_episode
from warehouse.errors import FlywheelError
from warehouse.store import Store


def screens_app(store: Store) -> Starlette:
    """An ASGI app serving step screens of ``store``'s episodes."""

    def screen(request: Request) -> Response:
        eid, step = request.path_params["episode_id"], request.path_params["step"]
        try:
            view = load_episode(store, eid)
        except FlywheelError as exc:
            return PlainTextResponse(str(exc), status_code=404)
        if not 0 <= step < len(view.steps):
            return PlainTextResponse(f"episode {eid} has no step {step}", status_code=404)
        svg, why = screens.step_screen(view.task, view.steps, step)
        if not svg:
            return PlainTextResponse(why or "no screen for this step", status_code=404)
        return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "max-age=3600"})

    return Starlette(routes=[Route("/{episode_id}/{step:int}.svg", screen)])
