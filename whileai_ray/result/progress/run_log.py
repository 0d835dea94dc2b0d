"""The run's logger: the docs' name, ``whileai.simulations``, with ``whileai_ray`` kept as an alias.

The docs (simulate.md, "Watching and resuming a long run") send progress lines to the
``whileai.simulations`` logger at INFO, and to stderr when nothing listens. Code written before
this package followed them listened on ``whileai_ray``, which Python's logging cannot make a
parent of ``whileai.simulations``. So both names hear every line, once:

* a line goes to ``whileai.simulations`` when that logger is enabled for its level; the
  :class:`_Alias` handler on it hands the record to the handlers set on ``whileai_ray`` too (their
  own handlers only: both loggers propagate to the root, which must see a record once);
* when only ``whileai_ray`` is set up for the level (its level and handlers, or pytest's
  ``caplog.set_level(..., logger="whileai_ray")``), the line is logged there instead.

:func:`listens` says whether either name will show an INFO line somewhere; when neither does,
the progress reporter prints it to stderr (``progress/lines.py``).
"""
from __future__ import annotations

import logging

__all__ = ["logger", "LEGACY", "announce", "listens"]

logger = logging.getLogger("whileai.simulations")
LEGACY = logging.getLogger("whileai_ray")


class _Alias(logging.Handler):
    """Hands a ``whileai.simulations`` record to the handlers set on ``whileai_ray``."""

    def emit(self, record: logging.LogRecord) -> None:
        if not LEGACY.isEnabledFor(record.levelno):
            return
        for handler in LEGACY.handlers:
            if not isinstance(handler, logging.NullHandler) and record.levelno >= handler.level:
                handler.handle(record)


logger.addHandler(_Alias())
LEGACY.addHandler(logging.NullHandler())


def announce(level: int, message: str) -> None:
    """Log ``message`` under the docs' name, or under the alias when only that one is set up."""
    if logger.isEnabledFor(level):
        logger.log(level, message)
    elif LEGACY.isEnabledFor(level):
        LEGACY.log(level, message)


def _handled(log: logging.Logger) -> bool:
    node: logging.Logger | None = log
    while node is not None:
        if any(not isinstance(h, (logging.NullHandler, _Alias)) for h in node.handlers):
            return True
        if not node.propagate:
            return False
        node = node.parent
    return False


def listens(level: int = logging.INFO) -> bool:
    """Whether a line at ``level`` reaches some handler under either name."""
    return any(log.isEnabledFor(level) and _handled(log) for log in (logger, LEGACY))
