"""Policies that act in the phone: the offline scripted policy (model policies come later)."""

from generators.policies.scripted import DEFAULT_ERROR_RATES, ScriptedPolicy

__all__ = ["DEFAULT_ERROR_RATES", "ScriptedPolicy"]
