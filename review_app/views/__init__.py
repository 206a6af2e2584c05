"""Thin Streamlit views: read through review_app's logic modules, render, write back."""

from __future__ import annotations

from dataclasses import dataclass

from review_app.accounts import User
from review_app.data import Overlap
from warehouse.store import Store


@dataclass
class Ctx:
    """What every view needs: the store, the signed-in user and the overlap rule."""

    store: Store
    user: User
    overlap: Overlap
