"""Policies that act in the phone: the offline scripted policy and its mistake-free reference
(model policies live in generators.policies.model_chat)."""

from generators.policies.reference import ReferencePolicy
from generators.policies.scripted import DEFAULT_ERROR_RATES, ScriptedPolicy

__all__ = ["DEFAULT_ERROR_RATES", "ReferencePolicy", "ScriptedPolicy"]
