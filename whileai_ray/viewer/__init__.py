"""``whileai-ray view DIR``: a local web viewer over a folder of runs.

The server (``server.py``, the standard library's ``ThreadingHTTPServer``, no new dependency)
serves a few server-rendered pages over the runs found in one folder (``paths.py``): the list
of runs, one run's rows with filters, one row's conversation, an N-way comparison of pass@k
and pass^k (``leaderboard.py``), and a small JSON endpoint the run page polls so a running
checkpoint's table refreshes as rows land. Each run is read once per version of its file
(``run_index.py``: path, mtime and size) into a small index; a row is decoded only when shown.

Safe by default: bound to 127.0.0.1; any other host needs a token; paths come only from the
served folder; files are data (JSON and Parquet are read, nothing is unpickled or run); every
piece of row text is escaped as the HTML report escapes it.
"""
from __future__ import annotations

from .server import make_server, serve

__all__ = ["make_server", "serve"]
