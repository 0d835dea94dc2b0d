"""Did a tool call fail? One reading of a tool's answer, in every form real logs write it.

Production traces rarely carry the mock world's tidy ``{"status": "timeout"}``. A failed call
is written as text (``Error: order not found``, ``ERROR - upstream refused``, a Python
traceback, ``ValueError: bad id``, ``404 Not Found``), as an error field (``{"error": ...}``,
``{"errors": [...]}``, ``{"isError": true}``), as an HTTP status (``{"status": 404}``,
``{"status_code": 503}``) or as a flag (``{"ok": false}``, ``{"success": false}``). Reading only
the status word counted all of those as success, so a run steered by such traces saw a fault
rate of 0. :func:`classify_tool_answer` is the one place that reads them; whoever judges tool
answers as faults (``situations/traces.py`` for ``simulate(traces=...)``) calls it.

Forms recognised (``fault=True``):

* a dict whose ``status`` is an error word (``error``, ``failed``, ``rejected``,
  ``invalid_arguments``, ``timeout``, ``permission_denied``, ...) or an HTTP code >= 400
  (``status``, ``status_code``, ``statusCode``, ``http_status``; ``code`` only beside an error
  message); a non-empty ``error`` / ``errors`` / ``exception`` field; ``ok`` / ``success`` false;
  ``isError`` / ``is_error`` true (MCP and Anthropic tool results); FastAPI's lone ``detail``;
* text, or a JSON string holding text, that *starts* like an error: ``Error: ...``,
  ``[ERROR] ...``, ``ERROR - ...`` (also after a log timestamp), ``Failed to ...``,
  ``Unable to ...``, ``Could not ...``, ``Request timed out``, ``Permission denied``; an
  exception (``Traceback (most recent call last):``, ``KeyError: 'x'``,
  ``requests.exceptions.ReadTimeout: ...``); an HTTP status line with its reason phrase
  (``404 Not Found``, ``HTTP/1.1 503 Service Unavailable``).

False-positive guards (``fault=False``): only the answer's own top level is read, never a field
value deep inside a record, so ``{"name": "error handling guide"}`` or a search hit titled
"Error codes" is a success; text counts only when it *starts* like an error (``Found 3 guides:
error handling, ...`` is a success); a number needs its HTTP reason phrase (``500 orders
shipped`` is a success); an empty ``error`` (``None``, ``""``, ``[]``, ``false``) is no error;
a ``status`` that is a record's own state (``shipped``, ``cancelled``, ``pending``, or
``failed`` / ``rejected`` on an answer that is itself a record with an id and no error field,
``{"payment_id": "p1", "status": "failed"}``) is success.

The mock world's structured ``{"status": "not_found"}`` / ``already_done`` answers stay what
they were: the tool worked and the *world state* says the record is missing (condition
``success``, world state ``entity missing``). A not-found written as an error (``Error: order
not found``, ``{"error": "not found"}``, ``{"status": 404}``) is a failed call: a fault whose
world state is also ``entity missing``; a short plain answer that only says so (``Order W1 not
found``) reads like the structured one: success, ``entity missing``.

:class:`ToolOutcome` maps the answer onto the grid's vocabulary: ``condition`` is a grid
``tool_condition`` (``success``, ``timeout``, ``malformed_result``, ``stale_result``,
``permission_denied``) or ``"error"`` for a failure of no grid mode (a 500, a bad request, a
not-found written as an error); ``None`` when the answer says nothing (``None``, empty text).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ToolOutcome", "classify_tool_answer", "GENERIC_FAULT"]

GENERIC_FAULT = "error"          # the condition of a failure that names no grid fault mode

_CONDITION = {"timeout": "timeout", "permission_denied": "permission_denied", "malformed": "malformed_result",
              "stale": "stale_result"}
_WORLD = {"not_found": "entity missing", "already_done": "entity already acted on"}
# status words of a working tool: the mock world's world-state answers (reference 3.3)
_WORLD_STATUS = {"not_found": "entity missing", "missing": "entity missing", "already_done": "entity already acted on",
                 "duplicate": "duplicate entity", "partial": "partially completed"}
_FAULT_STATUS = {"timeout": "timeout", "timed_out": "timeout", "malformed": "malformed", "stale": "stale",
                 "permission_denied": "permission_denied", "denied": "permission_denied",
                 "forbidden": "permission_denied", "unauthorized": "permission_denied",
                 "unauthorised": "permission_denied", "rate_limited": "rate_limited",
                 "too_many_requests": "rate_limited", "invalid_arguments": "invalid_arguments",
                 "invalid": "invalid_arguments", "bad_request": "invalid_arguments", "rejected": "rejected",
                 "unavailable": "server_error", "server_error": "server_error", "internal_error": "server_error"}
_RECORD_STATES = {"rejected", "invalid_arguments", "permission_denied"}   # also a record's own state
_ERROR_STATUS = {"error", "err", "failed", "failure", "fail", "fault", "exception", "aborted", "crashed"}
_HTTP_KEYS = ("status", "status_code", "statusCode", "http_status", "httpStatus", "http_code")
_ERROR_KEYS = ("error", "errors", "err", "exception", "error_message", "errorMessage", "error_code", "errorCode",
               "error_type", "errorType", "fault")
_MESSAGE_KEYS = ("message", "msg", "detail", "details", "reason")
_FALSE_FLAGS = ("ok", "success", "succeeded", "successful")

_HTTP_REASON = re.compile(
    r"^(?:HTTP(?:/\d(?:\.\d)?)?\s+|(?:status(?:\s+code)?|error)\s*:?\s*)?([45]\d\d)\s*[:\-]?\s*"
    r"(bad request|unauthori[sz]ed|payment required|forbidden|not found|method not allowed|not acceptable|"
    r"request time-?out|conflict|gone|unprocessable (?:entity|content)|too many requests|"
    r"internal server error|not implemented|bad gateway|service unavailable|gateway time-?out)\b", re.I)
_ERROR_START = re.compile(
    r"^\W{0,3}(?:error|err|fatal|failure|failed|exception|critical)\b\s*(?:\]|\)|\d{3}\b|[:\-\u2013\u2014|!])", re.I)
# a log line: [timestamp [- logger] -] ERROR|FATAL|CRITICAL, the level as a token of its own
_LOG_LEVEL = re.compile(r"^(?:\[?\d[\d\-/:.,T ]*\d(?:Z|[+-]\d\d:?\d\d)?\]?\s*(?:[\-|]\s*[\w.\-]+\s*)?[\-|]?\s*)?"
                        r"\[?(?:ERROR|FATAL|CRITICAL)\]?\s*(?:[:\-|]|$)")
_FAILED_START = re.compile(
    r"^(?:failed to|failed with|unable to|could not|couldn'?t|cannot|can'?t|"
    r"(?:the\s+)?(?:request|operation|call|connection)\s+(?:timed out|failed|refused|was refused|reset)|"
    r"timed out|time-?out\b|permission denied|access denied|access is denied|not authori[sz]ed|"
    r"unauthori[sz]ed\b|forbidden\b|connection (?:refused|reset|error)|internal server error|"
    r"service unavailable|too many requests|rate limit)", re.I)
_EXCEPTION = re.compile(
    r"^(?:(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Timeout|Fault|Denied|Refused|NotFound|Interrupt)\b|"
    r"(?:[a-z_]\w*\.)+(?:timeout|error|gaierror|herror)\b)\s*(?::|$)")        # socket.timeout: ...
_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\):", re.M)

_NOT_FOUND = re.compile(r"not[\s_-]?found|does not exist|doesn'?t exist|no such|unknown (?:order|user|id|record|"
                        r"item|reservation|account|customer)|\b404\b|KeyError|LookupError", re.I)

# what an error's own words say about it, checked in this order
_MESSAGE_KIND = (
    ("timeout", re.compile(r"\btimed?[\s-]?out\b|\btimeout\b|(?-i:(?:\b|(?<=[a-z.]))Timeout(?:Error|Exception)?\b)|"
                           r"deadline exceeded|\b(?:408|504)\b", re.I)),
    ("permission_denied", re.compile(r"permission|forbidden|unauthori[sz]ed|not authori[sz]ed|access denied|"
                                     r"access is denied|not allowed|\b(?:401|403)\b", re.I)),
    ("rate_limited", re.compile(r"rate[\s_-]?limit|too many requests|quota|\b429\b", re.I)),
    ("not_found", _NOT_FOUND),
    ("already_done", re.compile(r"already (?:been |exists|done|cancel|refund|processed|deleted)|\b409\b", re.I)),
    ("invalid_arguments", re.compile(r"invalid|validation|bad[\s_-]request|malformed[\s_-]request|placeholder|"
                                     r"missing[\s_-]required|required[\s_-](?:field|param)|ValueError|TypeError|"
                                     r"\b(?:400|422)\b", re.I)),
    ("malformed", re.compile(r"garbled|malformed (?:response|result|payload)|unparseable|cannot parse "
                             r"(?:the )?response|JSONDecodeError", re.I)),
    ("server_error", re.compile(r"internal server error|service unavailable|bad gateway|connection (?:refused|"
                                r"reset|error)|\b5\d\d\b", re.I)),
)


@dataclass(frozen=True)
class ToolOutcome:
    """One tool answer read: did the call fail, how, and what it shows on the grid's axes."""
    fault: bool                       # the answer says the call failed
    kind: str                         # ok / timeout / permission_denied / not_found / invalid_arguments / ...
    condition: str | None             # a grid tool_condition, GENERIC_FAULT, or None (the answer says nothing)
    world_state: str | None = None    # a grid world_state the answer shows, if any
    form: str = "status"              # how it said so: status / http_status / error_field / flag / text / exception

    @classmethod
    def success(cls, form: str = "status", world_state: str | None = None) -> "ToolOutcome":
        return cls(False, "ok", "success", world_state, form)

    @classmethod
    def failed(cls, kind: str, form: str) -> "ToolOutcome":
        return cls(True, kind, _CONDITION.get(kind, GENERIC_FAULT), _WORLD.get(kind), form)


def _kind_of_message(text: str, default: str = "error") -> str:
    for kind, pattern in _MESSAGE_KIND:
        if pattern.search(text):
            return kind
    return default


def _http_kind(code: int) -> str:
    return {400: "invalid_arguments", 401: "permission_denied", 403: "permission_denied", 404: "not_found",
            408: "timeout", 409: "already_done", 410: "not_found", 422: "invalid_arguments", 429: "rate_limited",
            504: "timeout"}.get(code, "server_error" if code >= 500 else "error")


def _http_code(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 100 <= value <= 599 else None
    if isinstance(value, str) and re.fullmatch(r"\s*[1-5]\d\d\s*", value):
        return int(value)
    return None


def _present(value: object) -> bool:
    """An error field that holds an error (not None, "", [], {}, False, 0)."""
    if value is None or isinstance(value, bool):
        return value is True
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (int, float)):
        return value != 0
    return bool(value) if isinstance(value, (list, tuple, dict)) else True


def _looks_like_record(answer: dict[Any, Any]) -> bool:
    """A record returned as the answer itself (``{"payment_id": .., "status": "failed"}``): its
    ``status`` is the record's state, not the call's, unless an error field says otherwise."""
    return any(k == "id" or str(k).endswith(("_id", "Id")) for k in answer) and \
        not any(_present(answer.get(k)) for k in _ERROR_KEYS + ("message", "msg", "detail", "reason"))


def _words(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)[:2000]


def _classify_text(text: str) -> ToolOutcome | None:
    stripped = text.strip()
    if not stripped:
        return None
    if stripped[0] in "{[":
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            return classify_tool_answer(parsed)
    lines = [line.strip() for line in stripped.splitlines() if line.strip()]
    first = lines[0][:300]
    if _TRACEBACK.search(stripped):
        return ToolOutcome.failed(_kind_of_message(lines[-1]), "exception")
    if _EXCEPTION.match(first):
        return ToolOutcome.failed(_kind_of_message(first), "exception")
    http = _HTTP_REASON.match(first)
    if http:
        return ToolOutcome.failed(_http_kind(int(http.group(1))), "text")
    if _ERROR_START.match(first) or _LOG_LEVEL.search(first) or _FAILED_START.match(first):
        return ToolOutcome.failed(_kind_of_message(stripped[:2000]), "text")
    if len(stripped) <= 200 and _NOT_FOUND.search(first):        # "Order W1 not found": the world's answer
        return ToolOutcome.success("text", "entity missing")
    return ToolOutcome.success("text")


def _classify_dict(answer: dict[Any, Any]) -> ToolOutcome:
    if _present(answer.get("stale")):
        return ToolOutcome.failed("stale", "status")
    data = answer.get("data")
    if isinstance(data, str) and "garbled" in data:
        return ToolOutcome.failed("malformed", "status")
    message = " ".join(_words(answer[k]) for k in _ERROR_KEYS + _MESSAGE_KEYS if _present(answer.get(k)))
    status = answer.get("status")
    if isinstance(status, str) and not _http_code(status):
        word = re.sub(r"[\s-]+", "_", status.strip().lower())
        record = _looks_like_record(answer)
        if word in _FAULT_STATUS and not (record and _FAULT_STATUS[word] in _RECORD_STATES):
            kind = _FAULT_STATUS[word]
            if kind == "rejected" and message:           # the mock world's refusal says why in "reason"
                kind = _kind_of_message(message, kind)
            return ToolOutcome.failed(kind, "status")
        if word in _WORLD_STATUS:
            return ToolOutcome.success("status", _WORLD_STATUS[word])
        if word in _ERROR_STATUS and not record:
            return ToolOutcome.failed(_kind_of_message(message), "status")
    for key in _HTTP_KEYS:
        code = _http_code(answer.get(key))
        if code is not None and code >= 400:
            return ToolOutcome.failed(_http_kind(code), "http_status")
    code = _http_code(answer.get("code"))
    if code is not None and code >= 400 and message:
        return ToolOutcome.failed(_http_kind(code), "http_status")
    if answer.get("isError") is True or answer.get("is_error") is True:
        inner = message or _words(answer.get("content", ""))
        return ToolOutcome.failed(_kind_of_message(inner), "flag")
    for key in _ERROR_KEYS:
        if _present(answer.get(key)):
            return ToolOutcome.failed(_kind_of_message(message), "error_field")
    for key in _FALSE_FLAGS:
        if answer.get(key) is False:
            return ToolOutcome.failed(_kind_of_message(message), "flag")
    if set(answer) == {"detail"} and _present(answer["detail"]):       # FastAPI's HTTPException body
        return ToolOutcome.failed(_kind_of_message(_words(answer["detail"])), "error_field")
    if set(answer) <= {"text", "content"} and isinstance(wrapped := answer.get("text", answer.get("content")), str):
        unwrapped = _classify_text(wrapped)      # a text answer wrapped in a dict
        if unwrapped is not None:
            return unwrapped
    return ToolOutcome.success("status")


def classify_tool_answer(answer: object) -> ToolOutcome:
    """Read one tool answer (a dict, a list, JSON text, plain text, a number, None): see the
    module docstring for the forms counted as faults and the guards against false ones."""
    if answer is None:
        return ToolOutcome(False, "none", None, None, "none")
    if isinstance(answer, dict):
        return _classify_dict(answer)
    if isinstance(answer, (bytes, bytearray)):
        answer = answer.decode("utf-8", errors="replace")
    if isinstance(answer, str):
        out = _classify_text(answer)
        return out if out is not None else ToolOutcome(False, "none", None, None, "text")
    return ToolOutcome.success("value")
