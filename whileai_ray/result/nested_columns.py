"""``steps`` and ``messages`` as nested Arrow columns, for ``data.to_arrow(nested=True)``.

The types and the conversion live in ``store/parquet/nested_steps.py``: since schema "2" the run's
Parquet copy stores both columns nested too, so a result's table and the Parquet copy agree.
``to_arrow()`` without ``nested`` keeps them as JSON text (the version-1 layout).

``steps``     list<struct<kind, tool, arguments_json, result_json, status, text, user, extra_json>>
``messages``  list<struct<role, content, name, tool_calls: list<struct<name, arguments_json>>>>

``row_json`` still holds every row exactly; these columns are a view for queries.
"""
from __future__ import annotations

from ..store.parquet.nested_steps import nest_columns, nested_schema

__all__ = ["nest_columns", "nested_schema"]
