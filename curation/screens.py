"""The phone screen of a recorded step, for the people who judge episodes.

The review app may import only warehouse and curation (DESIGN.md's layers); curation
may import the phone, so the phone's renderer reaches the review app through here.
"""

from __future__ import annotations

from generators.phone.screens import render_step

__all__ = ["render_step"]
