"""Knobs of the mock world: how often named records exist, id and date ranges, fault texts, word pools.

A user tunes them with ``simulate(..., advanced={"world": {...}})``; ``world_options(d)`` turns that
dict into a :class:`WorldOptions`, rejecting unknown keys by name so a typo never goes unnoticed.
``report()["world"]`` echoes ``WorldOptions.to_dict()``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

__all__ = ["WorldOptions", "world_options", "CONDITION_MODES"]

# Grid tool_condition values -> fault modes of the world (reference 3.3).
CONDITION_MODES = {
    "timeout": "timeout",
    "malformed_result": "malformed",
    "stale_result": "stale",
    "permission_denied": "permission_denied",
    "invalid_arguments": "invalid_arguments",
}


def _t(*words: str) -> tuple:
    return tuple(words)


@dataclass(frozen=True)
class WorldOptions:
    """Every field has a default; pass only what you want to change."""
    exists_share: float = 0.7                 # chance a user-named id exists (seeded per id)
    id_range: tuple = (1000, 90000)           # record ids are drawn in [lo, hi)
    date_years: tuple = (2022, 5)             # updated_at years: first year, number of years
    stale_as_of: str = "3 days ago"
    malformed_payload: str = "<<garbled resp0nse"
    default_fault_mode: str = "timeout"       # a fault plan entry without "mode"
    default_fault_rate: float = 1.0           # a fault plan entry without "rate"
    search_hits: tuple = (1, 6)               # search/list tools return this many records [lo, hi)
    condition_modes: dict = field(default_factory=lambda: dict(CONDITION_MODES))
    people: tuple = _t("lucas adeyemi", "maria gonzalez", "wei chen", "amara okafor", "john smith",
                       "priya nair", "sofia rossi", "kenji tanaka", "fatima zahra", "noah becker",
                       "olga ivanova", "diego alvarez")
    adjectives: tuple = _t("quarterly", "urgent", "annual", "pending", "draft", "shared", "legacy",
                           "weekly", "primary", "backup", "personal", "team")
    topics: tuple = _t("record", "request", "report", "account", "ticket", "invoice", "booking",
                       "subscription", "shipment", "profile")
    statuses: tuple = _t("active", "pending", "shipped", "failed", "closed", "on hold", "processing",
                         "completed")
    read_verbs: tuple = _t("get", "lookup", "look", "find", "search", "list", "check", "read", "fetch",
                           "show", "view", "query", "describe", "retrieve", "track", "verify", "status",
                           "count", "browse", "inspect")
    search_verbs: tuple = _t("search", "list", "find", "query", "browse")
    create_verbs: tuple = _t("create", "add", "new", "open", "book", "register", "insert", "make",
                             "place", "submit", "schedule", "file")
    delete_verbs: tuple = _t("delete", "remove", "destroy", "erase", "purge", "drop")
    placeholders: tuple = _t("", "the record", "<id>", "unknown", "n/a", "na", "none", "null", "tbd",
                             "todo", "xxx", "...", "?", "id", "placeholder", "example", "your id",
                             "order id", "record id", "the id", "missing", "not provided")

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (tuples become lists)."""
        out = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


_FIELDS = tuple(f.name for f in fields(WorldOptions))
_TUPLE_FIELDS = {f.name for f in fields(WorldOptions) if isinstance(getattr(WorldOptions, f.name, None), tuple)}
_PAIR_FIELDS = ("id_range", "date_years", "search_hits")


def _check(name: str, value):
    """Validate one user value; return it normalized (lists -> tuples)."""
    if name == "exists_share" or name == "default_fault_rate":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise ValueError(f"advanced['world']['{name}'] must be a number in [0, 1]; got {value!r}")
        return float(value)
    if name in _PAIR_FIELDS:
        ok = (isinstance(value, (list, tuple)) and len(value) == 2
              and all(isinstance(x, int) and not isinstance(x, bool) for x in value))
        if not ok or (name != "date_years" and value[0] >= value[1]) or (name == "date_years" and value[1] < 1):
            raise ValueError(f"advanced['world']['{name}'] must be a pair of integers "
                             f"[low, high) with low < high (date_years: [first_year, n_years]); got {value!r}")
        return tuple(value)
    if name in ("stale_as_of", "malformed_payload", "default_fault_mode"):
        if not isinstance(value, str):
            raise ValueError(f"advanced['world']['{name}'] must be a string; got {value!r}")
        return value
    if name == "condition_modes":
        if not isinstance(value, dict):
            raise ValueError(f"advanced['world']['condition_modes'] must be a dict condition -> fault mode; "
                             f"got {value!r}")
        return dict(value)
    if name in _TUPLE_FIELDS:
        if isinstance(value, str) or not isinstance(value, (list, tuple)) \
                or not all(isinstance(x, str) for x in value) or not value and name != "placeholders":
            raise ValueError(f"advanced['world']['{name}'] must be a non-empty list of strings; got {value!r}")
        return tuple(value)
    return value


def world_options(d=None) -> WorldOptions:
    """``advanced={"world": d}`` -> WorldOptions. None or {} gives the defaults.

    An unknown key raises ``ValueError`` naming it and listing every valid field.
    """
    if d is None:
        return WorldOptions()
    if isinstance(d, WorldOptions):
        return d
    if not isinstance(d, dict):
        raise ValueError(f"advanced['world'] must be a dict of world options; got {type(d).__name__}. "
                         f"Valid fields: {', '.join(_FIELDS)}")
    unknown = sorted(k for k in d if k not in _FIELDS)
    if unknown:
        raise ValueError(f"advanced['world'] has unknown option {unknown[0]!r}"
                         f"{' (and ' + ', '.join(map(repr, unknown[1:])) + ')' if unknown[1:] else ''}; "
                         f"valid fields: {', '.join(_FIELDS)}")
    return WorldOptions(**{k: _check(k, v) for k, v in d.items()})
