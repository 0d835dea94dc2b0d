"""RowList: the list ``data.rows`` returns; also callable, so ``data.rows()`` works too."""
from __future__ import annotations


class RowList(list):
    """A list of exported rows that carries the run's ``system_prompt`` and ``tools``."""

    system_prompt: str = ""
    tools: list = []

    def __call__(self) -> "RowList":
        return self
