"""core/tool_outcome.py: a tool answer is read as a failed call in the forms real logs write it
(text errors, error fields, HTTP statuses, flags, exceptions), and a success that merely mentions
"error" is not; and traces= counts those failures in trace_mining (issue 29, item 4)."""
from __future__ import annotations

import json

import pytest

from whileai_ray.config.knobs import Knobs
from whileai_ray.core.tool_outcome import GENERIC_FAULT, classify_tool_answer
from whileai_ray.search.traces.steering import plan_traces, widen_generic_faults
from whileai_ray.situations.grid import TOOL_CONDITIONS
from whileai_ray.situations.traces import read_traces

TRACEBACK = ('Traceback (most recent call last):\n  File "shop/api.py", line 41, in get_order\n'
             '    return ORDERS[order_id]\nKeyError: \'W1234567\'')

FAULTS = [   # (answer, kind, condition, world_state)
    ("Error: order not found", "not_found", GENERIC_FAULT, "entity missing"),
    ("error: order W1 not found", "not_found", GENERIC_FAULT, "entity missing"),
    ("ERROR - upstream refused the refund", "error", GENERIC_FAULT, None),
    ("[ERROR] timeout talking to the order service", "timeout", "timeout", None),
    ("ERROR:root:Permission denied for user 42", "permission_denied", "permission_denied", None),
    ("2024-05-01 12:00:00,123 - shop.api - ERROR - order W1 not found", "not_found", GENERIC_FAULT, "entity missing"),
    ("Error 500: something broke", "server_error", GENERIC_FAULT, None),
    ('{"error": "order not found"}', "not_found", GENERIC_FAULT, "entity missing"),
    ({"error": {"code": "rate_limit_exceeded", "message": "slow down"}}, "rate_limited", GENERIC_FAULT, None),
    ({"errors": [{"message": "Field 'order_id' is invalid"}]}, "invalid_arguments", GENERIC_FAULT, None),
    ({"status": 404}, "not_found", GENERIC_FAULT, "entity missing"),
    ({"status": "503"}, "server_error", GENERIC_FAULT, None),
    ({"status_code": 403, "body": ""}, "permission_denied", "permission_denied", None),
    ({"statusCode": 504}, "timeout", "timeout", None),
    ({"code": 500, "message": "internal"}, "server_error", GENERIC_FAULT, None),
    ({"ok": False}, "error", GENERIC_FAULT, None),
    ({"success": False, "message": "rate limit exceeded"}, "rate_limited", GENERIC_FAULT, None),
    ({"isError": True, "content": [{"type": "text", "text": "Order not found"}]}, "not_found", GENERIC_FAULT,
     "entity missing"),
    ({"detail": "Not Found"}, "not_found", GENERIC_FAULT, "entity missing"),
    ({"status": "error", "error": "ValueError: amount must be positive"}, "invalid_arguments", GENERIC_FAULT, None),
    ({"status": "failed"}, "error", GENERIC_FAULT, None),
    ({"status": "rejected", "reason": "missing_required", "fields": ["order_id"]}, "invalid_arguments",
     GENERIC_FAULT, None),
    (TRACEBACK, "not_found", GENERIC_FAULT, "entity missing"),
    ("ValueError: amount must be positive", "invalid_arguments", GENERIC_FAULT, None),
    ("requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api'): Read timed out.", "timeout", "timeout", None),
    ("404 Not Found", "not_found", GENERIC_FAULT, "entity missing"),
    ("HTTP/1.1 503 Service Unavailable", "server_error", GENERIC_FAULT, None),
    ("Request timed out after 30s", "timeout", "timeout", None),
    ("TimeoutError: read", "timeout", "timeout", None),
    ("socket.timeout: timed out", "timeout", "timeout", None),
    # a parameter *named* like a timeout does not make a validation error a timeout
    ({"status": "invalid_arguments",
      "errors": [{"path": "timeout_s", "message": "'timeout_s' is a required property"}]}, "invalid_arguments", GENERIC_FAULT, None),
    ({"error": "invalid value for 'deadline_timeout'"}, "invalid_arguments", GENERIC_FAULT, None),
    ("Failed to cancel order W1: payment gateway unreachable", "error", GENERIC_FAULT, None),
    ("Unable to find a reservation with that code", "error", GENERIC_FAULT, None),
    # the mock world's own fault answers keep their grid condition
    ({"status": "timeout", "error": "request timed out"}, "timeout", "timeout", None),
    ({"status": "permission_denied"}, "permission_denied", "permission_denied", None),
    ({"status": "ok", "data": "<<garbled resp0nse"}, "malformed", "malformed_result", None),
    ({"status": "ok", "data": {"id": "W1"}, "stale": True, "as_of": "3 days ago"}, "stale", "stale_result", None),
]

SUCCESSES = [   # (answer, world_state)
    ({"name": "error handling guide", "id": "kb-12"}, None),
    ({"status": "ok", "data": {"results": [{"title": "Error codes", "body": "ERROR: means ..."}], "count": 1}}, None),
    ("Found 3 guides: error handling, retries, timeouts", None),
    ("Error handling guide: step 1, catch the exception", None),
    ("Guide: ERROR codes explained", None),
    ("500 orders shipped this week", None),
    ({"error": None, "data": {"id": "W1"}}, None),
    ({"error": "", "errors": [], "ok": True}, None),
    ({"error_code": 0, "result": "refunded"}, None),
    ({"status": "shipped", "order_id": "W1"}, None),
    ({"payment_id": "P9", "status": "failed", "amount": 12.5}, None),     # a record whose own state is "failed"
    ({"code": 500, "name": "Room 500"}, None),                            # a number, not an HTTP status
    ({"status": 200, "data": []}, None),
    ({"status": "not_found", "missing": ["W1"]}, "entity missing"),       # the world's answer, not a failed call
    ({"status": "already_done", "reason": "already_acted_on"}, "entity already acted on"),
    ("Order W123 not found", "entity missing"),
    ('[{"id": "W1"}, {"id": "W2"}]', None),
    (42, None),
]


@pytest.mark.parametrize("answer, kind, condition, world_state", FAULTS)
def test_errors_in_the_forms_real_logs_write_them_are_faults(answer, kind, condition, world_state):
    out = classify_tool_answer(answer)
    assert (out.fault, out.kind, out.condition, out.world_state) == (True, kind, condition, world_state), out
    assert out.condition in TOOL_CONDITIONS or out.condition == GENERIC_FAULT


@pytest.mark.parametrize("answer, world_state", SUCCESSES)
def test_a_success_that_mentions_error_is_not_a_fault(answer, world_state):
    out = classify_tool_answer(answer)
    assert (out.fault, out.condition, out.world_state) == (False, "success", world_state), out


def test_an_answer_that_says_nothing_shows_no_condition():
    for answer in (None, "", "   "):
        assert classify_tool_answer(answer).condition is None and not classify_tool_answer(answer).fault


def _chat(i, answer):
    return {"messages": [
        {"role": "user", "content": f"Where is my order W{4000 + i}? It has not arrived."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
            "name": "lookup_order", "arguments": json.dumps({"order_id": f"W{4000 + i}"})}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": answer},
        {"role": "assistant", "content": "Sorry about that."}]}


class _Cfg:
    """The three settings plan_traces reads from a run's config."""
    def __init__(self, traces):
        self.traces, self.strategy, self.advanced, self.fault_rate_set, self.mode = traces, "auto", Knobs(), False, \
            "explore"


def test_text_errors_in_traces_count_as_faults_and_aim_at_the_fault_cells():
    answers = ["Error: order not found", json.dumps({"error": "order not found"}), json.dumps({"status": 404}),
               TRACEBACK, json.dumps({"status": "ok", "data": {"id": "W1", "note": "error handling guide"}}),
               "Order found: W1, shipped"]
    traces = read_traces([_chat(i, a) for i, a in enumerate(answers)])
    summary = traces.summary()
    assert summary["tool_conditions"] == {GENERIC_FAULT: 4, "success": 2}
    assert summary["world_states"]["entity missing"] == 4
    axes = {"tool": ["lookup_order", "cancel_order"], "tool_condition": list(TOOL_CONDITIONS),
            "world_state": ["entity exists", "entity missing"]}
    regions = widen_generic_faults(traces.regions(axes), traces, axes)
    assert regions["tool_condition"] == list(TOOL_CONDITIONS)          # success shown + every fault cell
    plan = plan_traces(_Cfg([_chat(i, a) for i, a in enumerate(answers)]), axes, [], False)
    assert plan.fault_rate == round(4 / 6, 4) and plan.mining["fault_traces"] == 4
    assert plan.regions["tool_condition"] == list(TOOL_CONDITIONS)
