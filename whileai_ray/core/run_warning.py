"""RunWarning: one note a run leaves for its caller, as text that also carries a code.

``data.warnings`` is documented as a list of plain sentences, and callers print, compare and
save them as strings; so a ``RunWarning`` *is* a ``str`` (the sentence), with two attributes
the code reads instead of the words:

* ``code``: what the note is about (``"template_writer"``, ``"rollouts_lost"``, ...). A later
  step that makes a note obsolete removes it by code (``drop(warnings, "template_writer")``),
  never by matching the sentence's opening words;
* ``listed`` / ``raised``: whether it goes into ``data.warnings``, is raised as a Python
  ``UserWarning`` when ``simulate()`` returns, or both.

It pickles, deep-copies and JSON-encodes as its text (a saved run reloads plain strings).
Lives in ``core`` because every layer that speaks to the caller makes them (config's roles,
the result's report, the runtime's checkpoint notes).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

__all__ = ["RunWarning", "code_of", "drop", "listed", "raised"]


class RunWarning(str):
    code: str
    listed: bool
    raised: bool

    def __new__(cls, text: str, code: str, *, listed: bool = True, raised: bool = False) -> "RunWarning":
        self = super().__new__(cls, text)
        self.code, self.listed, self.raised = code, listed, raised
        return self

    def __reduce_ex__(self, protocol: Any) -> tuple[Callable[..., RunWarning], tuple[str, str, bool, bool]]:
        return (_rebuild, (str(self), self.code, self.listed, self.raised))

    def __deepcopy__(self, memo: Any) -> "RunWarning":
        return self

    def __copy__(self) -> "RunWarning":
        return self


def _rebuild(text: str, code: str, listed_: bool, raised_: bool) -> RunWarning:
    return RunWarning(text, code, listed=listed_, raised=raised_)


def code_of(warning: object) -> str | None:
    """A warning's code; None for a plain string (a note read back from a saved run)."""
    code: str | None = getattr(warning, "code", None)
    return code


def drop(warnings: list[Any], *codes: str) -> None:
    """Remove, in place, the warnings whose code is one of ``codes``."""
    warnings[:] = [w for w in warnings if code_of(w) not in codes]


def listed(warnings: Iterable[Any]) -> list[Any]:
    """The ones that belong in ``data.warnings`` (plain strings always do)."""
    return [w for w in warnings if getattr(w, "listed", True)]


def raised(warnings: Iterable[Any]) -> list[Any]:
    """The ones raised as ``UserWarning`` when the run returns."""
    return [w for w in warnings if getattr(w, "raised", False)]
