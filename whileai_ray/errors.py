"""The exceptions a user of whileai_ray catches, importable without loading any engine part.

``import whileai_ray`` stays light (no ray, no pyarrow); ``wai.PublishGateError`` lives here so
naming it does not load the export stack. Each class is raised by one layer (named below) and
re-exported from that layer's module for code that imported it from there.
"""
from __future__ import annotations

__all__ = ["PublishGateError", "SpecError", "JudgeTrustError"]


class PublishGateError(ValueError):
    """The publish gate refused a run; the message starts with the reason code (``export/push.py``)."""


class SpecError(ValueError):
    """A run spec that cannot be used; the message names the file and the field (``config/run_spec.py``)."""


class JudgeTrustError(RuntimeError):
    """``trust="require"`` and the judge is unmeasured or under the floors (``score/judges/labels.py``)."""
