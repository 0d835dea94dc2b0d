"""Hand memory the Driver has freed back to the system, every few seconds of a run.

A long run's Driver frees as much as it allocates (each batch of rows is encoded, written to the
checkpoint and the spool, and let go), but two allocators keep what is freed for later:

* glibc gives each thread that allocates its own arena (the checkpoint and snapshot writers run
  in ``asyncio.to_thread`` threads) and returns an arena's free pages to the system only when
  they sit at its top; ``malloc_trim(0)`` returns every free page of every arena;
* Arrow's memory pool (the spool's and the Parquet writer's buffers) keeps freed blocks for reuse;
  ``MemoryPool.release_unused()`` hands them back.

Measured on a million-row run without these calls, the Driver's resident memory grew about
1.07 KB a row (1,429 MB peak), and at 589k rows 350 MB of it sat in glibc's heap and thread
arenas and ~100 MB in Arrow's pool, memory the Driver no longer used. With them a 200,000-row
run grew ~0.15 KB a row (418 MB at 75k rows, 434 MB at 179k; the thread arenas hold nothing).
Blocks of 1 MiB and more are also given their own mapping (``mallopt(M_MMAP_THRESHOLD)``, which
stops glibc from raising that threshold as big blocks are freed), so a table that doubles frees
its old half to the system instead of leaving a hole in the heap.

``HeapTrim.maybe()`` is called after each landed batch (``driver/landing.py``) and does the two calls
at most every ``every_s`` seconds (a few milliseconds each). Where there is no glibc (macOS,
musl) the first is skipped; without pyarrow loaded the second is.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys
import time
from functools import lru_cache
from typing import Callable

__all__ = ["HeapTrim"]


M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 1 << 20


@lru_cache(maxsize=1)
def _libc_calls():
    """``(malloc_trim, mallopt)`` of glibc, or ``(None, None)``; looked up once per process.

    glibc by its soname first: ``ctypes.util.find_library`` runs ``ldconfig -p`` in a child
    process to learn it (1-2 ms on an idle machine, ~50 ms in a new Driver on a busy one: it
    stood between a first run's call and its first units). Elsewhere (musl, macOS) the search."""
    names = (["libc.so.6"] if sys.platform.startswith("linux") else []) + [None]
    for name in names:
        try:
            libc = ctypes.CDLL(name or ctypes.util.find_library("c") or "libc.so.6")
            trim, opt = libc.malloc_trim, libc.mallopt
        except (OSError, AttributeError):
            continue
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
        opt.argtypes, opt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        return trim, opt
    return None, None


class HeapTrim:
    def __init__(self, every_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self.every_s, self.clock = float(every_s), clock
        self._next = clock() + self.every_s
        self._trim, mallopt = _libc_calls()
        if mallopt is not None:             # blocks of 1 MiB and up (the planner's tables as they
            mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)   # grow) are mapped alone and unmapped when freed
        self.calls = 0

    def maybe(self) -> None:
        """Trim if ``every_s`` have passed since the last time."""
        now = self.clock()
        if now >= self._next:
            self._next = now + self.every_s
            self.now()

    def now(self) -> None:
        self.calls += 1
        pa = sys.modules.get("pyarrow")          # only a pool someone used has anything to give
        if pa is not None:
            pa.default_memory_pool().release_unused()
        if self._trim is not None:
            self._trim(0)
