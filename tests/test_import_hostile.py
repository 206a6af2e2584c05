"""Hostile and odd records in every import format: each is skipped with a reason or the file is
refused in one line (InputError), never a traceback."""

from __future__ import annotations

import json

import pytest

from flows.import_cmd import prepare_import
from warehouse.errors import InputError

ODD = [None, 1, "x", [], {}, [1, 2], {"a": None}, [{"role": None}], {"parts": 3}, [[]], True]


def _try(path, fmt):
    try:
        prepared = prepare_import(path, fmt)
    except InputError as exc:
        assert "\n" not in str(exc)
        return None
    return prepared


@pytest.mark.parametrize("odd", ODD, ids=[repr(o)[:20] for o in ODD])
def test_odd_values_in_every_field_never_crash(tmp_path, odd):
    good_msg = {"role": "assistant", "content": "hi", "tool_calls": [{"id": "a", "function": "f", "arguments": {}}]}
    cases = {
        "inspect": {"eval": odd, "samples": [{"id": 1, "epoch": odd, "messages": odd, "scores": odd},
                                             {"id": 2, "epoch": 1, "messages": [good_msg, {"role": "tool", "content": odd, "error": odd, "tool_call_id": odd}]}]},
        "tau2": {"info": odd, "simulations": [{"task_id": "1", "trial": odd, "messages": odd, "reward_info": odd},
                                              {"task_id": 2, "messages": [{"role": "assistant", "tool_calls": odd}, {"role": "tool", "id": odd, "content": odd}]}]},
        "otel": {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": odd, "attributes": [{"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(odd)}},
                                                                                            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(odd)}}]},
                                                              {"traceId": "t", "startTimeUnixNano": odd, "attributes": odd}]}]}, {"scopeSpans": odd}]},
        "adp": {"id": odd, "content": [{"class_": "api_action", "function": odd, "kwargs": odd},
                                       {"class_": "text_observation", "content": odd, "source": odd, "tool_call_id": odd}], "details": odd},
    }
    for fmt, value in cases.items():
        path = tmp_path / f"{fmt}.json"
        path.write_text(json.dumps(value))
        _try(path, fmt)
