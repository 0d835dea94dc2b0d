"""The viewer's HTTP server: the standard library's ``ThreadingHTTPServer``, GET only.

Routes: ``/`` the runs, ``/run?path=`` one run (filters: ``filters.py``), ``/row?path=&i=`` one
row, ``/compare?path=a&path=b...`` the leaderboard, ``/api/run?path=`` the run's row count as
JSON (what the run page polls). Everything else is a 404.

Who may ask: bound to a loopback address by default. Binding anywhere else needs a token
(``make_server`` refuses otherwise, before opening a socket); with a token every request
carries it, as ``?token=`` once (answered with a cookie and a redirect that drops it from the
address bar) or an ``Authorization: Bearer`` header, else 401. Without a token, a request
whose ``Host`` is not a loopback name is refused (a web page elsewhere cannot reach the
viewer through DNS rebinding). Answers carry a Content-Security-Policy that allows only the
page's own inline style and script and requests to this server.
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
import sys
import threading
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

from . import filters, leaderboard, pages
from .paths import find_runs, parquet_copy, resolve
from .run_index import RunCache

__all__ = ["make_server", "serve", "is_loopback", "MIN_TOKEN_CHARS"]

MIN_TOKEN_CHARS = 16
COOKIE = "whileai_view_token"
MAX_COMPARE = 12
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def is_loopback(host: str) -> bool:
    """Is ``host`` a loopback address (or ``localhost``)? Names other than localhost are not."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The name in a Host header, without its port (``[::1]:8765`` -> ``[::1]``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header.split("]")[0] + "]"
    return header.rsplit(":", 1)[0]


class ViewerServer(ThreadingHTTPServer):
    """The standard library's server, holding what every request reads (set by make_server)."""
    root: str                 # the folder of runs, as given
    root_real: str            # the same, every link resolved
    token: str | None         # None: loopback requests only
    verbose: bool             # log each request to stderr
    cache: RunCache


class _Handler(BaseHTTPRequestHandler):
    server_version = "whileai-ray-view"
    sys_version = ""
    server: ViewerServer

    def log_message(self, fmt, *args):          # quiet unless asked: a page polls every 2 s
        if self.server.verbose:
            sys.stderr.write("view: " + (fmt % args) + "\n")

    # ------------------------------------------------------------ answers
    def _send(self, status: int, body: str, kind: str = "text/html; charset=utf-8", extra=()) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _refuse(self, status: int, title: str, text: str) -> None:
        self._send(status, pages.message_page(title, text))

    # ------------------------------------------------------------ who asks
    def _allowed(self, url, query) -> bool:
        token = self.server.token
        if token is None:
            if not is_loopback(_host_name(self.headers.get("Host") or "")):
                self._refuse(403, "Refused", "this viewer answers only requests addressed to 127.0.0.1 or localhost")
                return False
            return True
        given = (query.get("token") or [None])[0]
        if given is not None and hmac.compare_digest(given.encode(), token.encode()):
            rest = [(k, v) for k, vs in query.items() if k != "token" for v in vs]
            target = url.path + ("?" + urlencode(rest) if rest else "")
            self._send(303, "", extra=[("Location", target),
                                       ("Set-Cookie", f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/")])
            return False
        auth = self.headers.get("Authorization") or ""
        if auth.startswith("Bearer ") and hmac.compare_digest(auth[7:].strip().encode(), token.encode()):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(self.headers.get("Cookie") or "")
        except Exception:
            cookie = SimpleCookie()
        if COOKIE in cookie and hmac.compare_digest(cookie[COOKIE].value.encode(), token.encode()):
            return True
        self._refuse(401, "Token needed", "this viewer needs its token: open the address it printed "
                     "(it ends in ?token=...), or send Authorization: Bearer <token>")
        return False

    # ------------------------------------------------------------ routes
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=False)
        if not self._allowed(url, query):
            return
        route = {"/": self._list, "/run": self._run, "/row": self._row, "/compare": self._compare,
                 "/api/run": self._api_run}.get(url.path)
        if route is None:
            self._refuse(404, "Not found", "no such page; the runs are listed at /")
            return
        try:
            route(query)
        except (ValueError, IndexError) as exc:
            if url.path == "/api/run":
                self._send(404, json.dumps({"error": str(exc)}), "application/json")
            else:
                self._refuse(404, "Not found", str(exc))
        except Exception as exc:             # a file that is not what it says: said, never a dropped connection
            self._refuse(500, "Could not read the run", f"{type(exc).__name__}: {str(exc)[:500]}")

    def _index(self, query, wait: bool = True):
        """``(rel, index)`` of the run ``?path=`` names; ``wait=False``: a large run not read yet
        gives its first rows at once (``RunCache.peek``) while the rest is read."""
        rel = (query.get("path") or [None])[0]
        path = resolve(self.server.root, rel)
        return rel, self.server.cache.get(path) if wait else self.server.cache.peek(path)

    def _list(self, query) -> None:
        rels, cut = find_runs(self.server.root)
        runs = []
        for rel in rels:
            full = os.path.join(self.server.root_real, rel)
            info = {"rel": rel, "mtime": os.path.getmtime(full), "copy": parquet_copy(full)}
            try:
                summary = self.server.cache.summary(resolve(self.server.root, rel))
                if summary is None:
                    info.update(reading=os.path.getsize(full) if os.path.isfile(full) else None)
                else:
                    info.update(summary)
            except Exception as exc:          # one damaged file must not hide the others
                info["error"] = f"could not read it: {type(exc).__name__}: {exc}"
            runs.append(info)
        self._send(200, pages.list_page(self.server.root, runs, cut))

    def _run(self, query) -> None:
        rel, index = self._index(query, wait=False)
        chosen, page = filters.parse(query)
        self._send(200, pages.run_page(rel, index, chosen, page, filters.select(index, chosen)))

    def _row(self, query) -> None:
        rel, index = self._index(query)
        try:
            i = int((query.get("i") or [""])[0])
        except ValueError:
            raise ValueError("name a row: &i=<its number on the run page>") from None
        self._send(200, pages.row_page(rel, i, len(index), index.row(i)))

    def _compare(self, query) -> None:
        rels = list(dict.fromkeys(query.get("path") or []))[:MAX_COMPARE]
        if not rels:
            raise ValueError("tick the runs to compare on the first page (one or more)")
        indexes = [self.server.cache.get(resolve(self.server.root, rel)) for rel in rels]
        k_max = leaderboard.max_k(indexes)
        all_curves = [leaderboard.curves(ix, k_max) for ix in indexes]
        problems = [f"{rel}: no graded rows (grade it first: data.grade(...))"
                    for rel, points in zip(rels, all_curves) if points[0][1].pass_at_1 is None]
        table = leaderboard.table_html(rels, all_curves, [len(ix) for ix in indexes])
        self._send(200, pages.compare_page(rels, table, leaderboard.chart_svg(rels, all_curves), problems))

    def _api_run(self, query) -> None:
        rel, index = self._index(query, wait=False)
        self._send(200, json.dumps({"path": rel, "rows": len(index), "ready": not index.partial,
                                    "mtime_ns": index.sig[1], "size": index.sig[2]}), "application/json")


def make_server(root, host: str = "127.0.0.1", port: int = 8765, token: str | None = None,
                verbose: bool = False) -> ViewerServer:
    """A server over the runs in folder ``root`` (not yet serving: call ``serve_forever``).
    ValueError, before any socket opens, for a missing folder, a host that is not loopback
    without a token, or a token too short to guess at."""
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise ValueError(f"DIR={root!r} is not a folder; pass the folder that holds your runs "
                         "(checkpoint, output= or save() files)")
    if token is not None and not re.fullmatch(r"[A-Za-z0-9._~+/=-]+", token):
        raise ValueError("--token may hold letters, digits and . _ ~ + / = - only (it travels in a URL "
                         "and a cookie); make one with python -c 'import secrets; print(secrets.token_urlsafe())'")
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"--token must be at least {MIN_TOKEN_CHARS} characters; make one with "
                         "python -c 'import secrets; print(secrets.token_urlsafe())'")
    if not is_loopback(host) and token is None:
        raise ValueError(f"--host {host} can be reached from other machines: pass --token SECRET as well "
                         "(every request must then carry it), or leave --host at 127.0.0.1")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"--port must be 0..65535 (0: any free port); got {port!r}")
    server = ViewerServer((host, port), _Handler)
    server.daemon_threads = True
    server.root, server.root_real = root, os.path.realpath(root)
    server.token, server.verbose = token, verbose
    server.cache = RunCache()
    return server


def url_of(server) -> str:
    host, port = server.server_address[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/" + (f"?token={server.token}" if server.token else "")


def warm(server) -> threading.Thread:
    """Read every run once in the background, so the first pages open at once."""
    def go():
        for rel in find_runs(server.root)[0]:
            try:
                server.cache.get(resolve(server.root, rel))
            except Exception:
                pass                           # the list page says what went wrong with it
    thread = threading.Thread(target=go, name="whileai-view-warm", daemon=True)
    thread.start()
    return thread


def serve(root, host: str = "127.0.0.1", port: int = 8765, token: str | None = None, verbose: bool = False) -> None:
    """Serve until interrupted (Ctrl-C); prints the address to open."""
    server = make_server(root, host, port, token, verbose)
    print(f"whileai-ray view: serving {os.path.abspath(root)} at {url_of(server)} (Ctrl-C stops)", flush=True)
    warm(server)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
