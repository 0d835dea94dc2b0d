"""Compact storage for the planner's per-situation state, and the shape its snapshot takes.

The planner keeps a few numbers per situation it opened and per row that landed (ids,
counters, 64-bit digests, MinHash sketches). Held as Python objects (dicts of dataclasses,
sets of prompt strings) a 100,000-row planner weighed ~130 MB pickled; held here it is a few
numpy/array columns.

* :class:`Column`: a growable numpy array (1-D, or rows of a fixed width) that is only ever
  appended to. ``view()`` is the filled part; because a written row is never written again,
  a view taken now stays valid while the column keeps growing (growth copies into a new
  buffer and leaves the old one to the views that hold it). That is what lets a snapshot be
  taken in the driver's loop without copying: the snapshot thread reads the views.
* :class:`DigestSet`: a set of 64-bit digests that also remembers the order they came in (a
  :class:`Column`), so a snapshot writes only the members added since the last one.
* :func:`digest`: the 64-bit digest the sets hold (blake2b of the text; ``None`` is 0);
  :func:`prompt_digest`: a prompt's, the first 64 bits of its SHA-256 (the ``prompt_sha`` of a
  row key, as an int), so a row's key can be told from the planner's digest of its prompt.

A part's state (``state()`` on the planner and on each of its parts) is a :class:`State`:
``meta`` (small JSON-able values, written whole every time), ``logs`` (append-only arrays:
only their new tail is written) and ``tables`` (arrays that change in place, copied when the
state is taken: only their changed rows are written). ``State.nest`` prefixes the names of a
part's arrays so the planner's state is one flat :class:`State`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .digest_table import DigestTable

__all__ = ["Column", "DigestSet", "State", "digest", "prompt_digest"]


def digest(value: object) -> int:
    """A 64-bit digest of ``str(value)`` (0 for None): what the planner's sets hold instead of text."""
    if value is None:
        return 0
    return int.from_bytes(hashlib.blake2b(str(value).encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little")


def prompt_digest(prompt: str) -> int:
    """``int(prompt_sha(prompt), 16)``: the first 64 bits of the prompt's SHA-256."""
    return int.from_bytes(hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).digest()[:8], "big")


class Column:
    """An append-only numpy column; ``width`` > 0 makes it rows of that many values."""

    __slots__ = ("_a", "n", "dtype", "width")

    def __init__(self, dtype: DTypeLike, width: int = 0, capacity: int = 1024) -> None:
        self.dtype, self.width = np.dtype(dtype), int(width)
        self._a = np.zeros((capacity, width) if width else capacity, dtype=self.dtype)
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def _grow(self, need: int) -> None:
        size = max(need, 2 * len(self._a))
        grown = np.zeros((size, self.width) if self.width else size, dtype=self.dtype)
        grown[:self.n] = self._a[:self.n]
        self._a = grown                   # views of the old buffer keep it (and stay valid)

    def append(self, value: Any) -> int:
        if self.n == len(self._a):
            self._grow(self.n + 1)
        self._a[self.n] = value
        self.n += 1
        return self.n - 1

    def extend(self, values: ArrayLike) -> None:
        values = np.asarray(values, dtype=self.dtype)
        if self.n + len(values) > len(self._a):
            self._grow(self.n + len(values))
        self._a[self.n:self.n + len(values)] = values
        self.n += len(values)

    def __getitem__(self, i: int) -> Any:
        if i >= self.n or i < -self.n:
            raise IndexError(i)
        return self._a[i]

    def view(self) -> np.ndarray:
        """The filled part (read-only): valid for good, whatever is appended later."""
        v = self._a[:self.n]
        v.flags.writeable = False
        return v

    @classmethod
    def of(cls, values: ArrayLike, dtype: DTypeLike, width: int = 0) -> "Column":
        """A column holding ``values``: an array of its own (fresh, writeable, contiguous, of the
        dtype and shape) is adopted as the column's buffer, not copied (a million-prompt
        restore's tables would otherwise sit in memory twice); anything else is copied."""
        values = np.asarray(values, dtype=dtype)
        shape_ok = values.ndim == (2 if width else 1) and (not width or values.shape[1] == width)
        if (shape_ok and values.base is None and values.flags.writeable and values.flags.c_contiguous
                and len(values) >= 1024):
            col = cls(dtype, width, capacity=0)
            col._a, col.n = values, len(values)
            return col
        col = cls(dtype, width, capacity=max(1024, len(values)))
        col.extend(values)
        return col


class DigestSet:
    """A set of 64-bit digests with their insertion order (for snapshots of what was added;
    ``logged=False`` keeps no order, for a set a snapshot derives instead of storing)."""

    __slots__ = ("_set", "log")

    def __init__(self, members: Iterable[int] = (), logged: bool = True) -> None:
        self._set = DigestTable()
        self.log = Column(np.uint64) if logged else None
        for m in members:
            self.add(int(m))

    def __len__(self) -> int:
        return len(self._set)

    def __contains__(self, d: int) -> bool:
        return d in self._set

    def sorted(self) -> np.ndarray:
        """The members, ascending (uint64)."""
        return np.sort(self._set.members()[0])

    def add(self, d: int) -> bool:
        """Add a digest; True when it was new."""
        if not self._set.add(d):
            return False
        if self.log is not None:
            self.log.append(d)
        return True

    @classmethod
    def of(cls, log: ArrayLike, logged: bool = True) -> "DigestSet":
        out = cls(logged=False)
        if logged:
            out.log = Column.of(log, np.uint64)
            out._set = DigestTable.of(out.log.view())
        else:
            out._set = DigestTable.of(log)
        return out


@dataclass
class State:
    """A part's snapshot state: see the module docstring."""
    meta: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, np.ndarray] = field(default_factory=dict)
    tables: dict[str, np.ndarray] = field(default_factory=dict)

    def nest(self, name: str, part: "State") -> "State":
        """Take ``part`` in under ``name``: its meta as ``meta[name]``, its arrays as ``name.<array>``."""
        self.meta[name] = part.meta
        self.logs.update({f"{name}.{k}": v for k, v in part.logs.items()})
        self.tables.update({f"{name}.{k}": v for k, v in part.tables.items()})
        return self

    def part(self, name: str) -> "State":
        """The state ``nest(name, ...)`` took in (arrays without the prefix)."""
        pre = name + "."
        return State(self.meta.get(name) or {},
                     {k[len(pre):]: v for k, v in self.logs.items() if k.startswith(pre)},
                     {k[len(pre):]: v for k, v in self.tables.items() if k.startswith(pre)})

    def array(self, name: str, dtype: DTypeLike, width: int | None = None) -> np.ndarray:
        """Array ``name`` (a log or a table), checked: its type and, for rows, their width.
        Raises ValueError on a missing or mistyped array (the snapshot is then not used)."""
        arr = self.logs.get(name)
        if arr is None:
            arr = self.tables.get(name)
        if arr is None:
            raise ValueError(f"snapshot state lacks array {name!r}")
        if arr.dtype != np.dtype(dtype):
            raise ValueError(f"snapshot array {name!r} is {arr.dtype}, expected {np.dtype(dtype)}")
        if width is not None and (arr.ndim != 2 or arr.shape[1] != width) or width is None and arr.ndim != 1:
            raise ValueError(f"snapshot array {name!r} has shape {arr.shape}")
        return arr
