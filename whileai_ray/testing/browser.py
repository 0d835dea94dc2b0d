"""Open a page in headless Chromium and watch it the way DevTools does (tests of the HTML report).

``Chromium()`` starts Debian's ``chromium`` with networking features off and a throwaway
profile, on a DevTools port bound to loopback, and speaks the DevTools protocol over a
websocket (aiohttp, which Ray's default extra already brings). ``open(path)`` loads a file
and records, until closed, every console error, uncaught exception, browser log error,
dialog and network request of the page; ``evaluate(js)`` runs script in it;
``screenshot(selector)`` returns a PNG of each matching element.

Why the protocol and not log scraping: console messages and exceptions arrive as structured
events with their level, so "no console errors" is an exact check rather than a grep.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:                   # aiohttp is imported when a page opens (_connect)
    import aiohttp

__all__ = ["Chromium", "chromium_path", "LAUNCH_FLAGS"]

LAUNCH_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--hide-scrollbars")


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Chromium:
    """A headless Chromium and one page in it; use as a context manager."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 60.0):
        self.width, self.height, self.timeout = width, height, timeout
        self.loop = asyncio.new_event_loop()
        self.profile = tempfile.mkdtemp(prefix="wai-chromium-")
        self.proc = None
        self.http: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse[bool] | None = None     # the DevTools socket, once connected
        self.session = None
        self._id = 0
        self._pending: dict = {}
        self._reader: asyncio.Future | None = None
        self.console_errors: list = []     # console.error/assert, uncaught exceptions, log errors
        self.requests: list = []           # every URL the page asked for
        self.dialogs: list = []            # alert/confirm/prompt the page opened
        self._load = None

    # ------------------------------------------------------------ start, stop
    def __enter__(self):
        binary = chromium_path()
        if binary is None:
            raise RuntimeError("no chromium on PATH; install Debian's package: apt-get install -y chromium")
        # its temporary files (the profile's singleton socket folder among them, which a terminated
        # Chromium leaves behind) go inside the profile, removed with it
        scratch = os.path.join(self.profile, "tmp")
        os.mkdir(scratch)
        self.proc = subprocess.Popen([binary, *LAUNCH_FLAGS, f"--user-data-dir={self.profile}",
                                      f"--window-size={self.width},{self.height}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                     env={**os.environ, "TMPDIR": scratch})
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + self.timeout
        while not (os.path.exists(port_file) and len(open(port_file).read().splitlines()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port, path = open(port_file).read().splitlines()[:2]
        self._run(self._connect(f"ws://127.0.0.1:{port}{path}"))
        return self

    def __exit__(self, *exc):
        if self.ws is not None:
            self._run(self._close())
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:          # its helpers (zygote, GPU, renderers) may outlive it a moment
            try:                           # and write into the profile after it is gone: its group goes too
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.loop.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _run(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, self.timeout))

    async def _connect(self, url: str) -> None:
        import aiohttp
        http = self.http = aiohttp.ClientSession()
        self.ws = await http.ws_connect(url, max_msg_size=0)
        self._reader = asyncio.ensure_future(self._read())
        target = await self._send("Target.createTarget", {"url": "about:blank"})
        attached = await self._send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            await self._send(f"{domain}.enable")
        await self._send("Emulation.setDeviceMetricsOverride",
                         {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})

    async def _close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        await self._socket().close()
        if self.http is not None:
            await self.http.close()

    def _socket(self) -> aiohttp.ClientWebSocketResponse[bool]:
        if self.ws is None:
            raise RuntimeError("Chromium: no DevTools connection (the page was never opened)")
        return self.ws

    # --------------------------------------------------------------- protocol
    async def _send(self, method: str, params: dict | None = None) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        fut = self.loop.create_future()
        self._pending[self._id] = fut
        await self._socket().send_str(json.dumps(msg))
        reply = await fut
        if "error" in reply:
            raise RuntimeError(f"DevTools {method}: {reply['error']}")
        return reply.get("result", {})

    async def _read(self) -> None:
        async for message in self._socket():
            data = json.loads(message.data)
            if "id" in data:
                fut = self._pending.pop(data["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(data)
            else:
                self._event(data.get("method"), data.get("params") or {})

    def _event(self, method: str, p: dict) -> None:
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            self.console_errors.append(f"console.{p['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = p.get("exceptionDetails") or {}
            self.console_errors.append("exception: " + str((details.get("exception") or {}).get(
                "description", details.get("text"))))
        elif method == "Log.entryAdded" and (p.get("entry") or {}).get("level") == "error":
            entry = p["entry"]
            self.console_errors.append(f"log {entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            self.requests.append((p.get("request") or {}).get("url"))
        elif method == "Page.javascriptDialogOpening":
            self.dialogs.append(p.get("message"))
            asyncio.ensure_future(self._send("Page.handleJavaScriptDialog", {"accept": True}))
        elif method == "Page.loadEventFired" and self._load is not None and not self._load.done():
            self._load.set_result(True)

    # -------------------------------------------------------------- the page
    def open(self, path: str) -> None:
        """Load a local file and wait for its load event (and a moment for its script)."""
        self.open_url("file://" + os.path.abspath(path))

    def open_url(self, url: str) -> None:
        """Load ``url`` (the viewer's pages: ``http://127.0.0.1:PORT/...``) and wait for its load event."""
        async def go():
            self._load = self.loop.create_future()
            await self._send("Page.navigate", {"url": url})
            await self._load
            await asyncio.sleep(0.3)
        self._run(go())

    def follow(self, expression: str) -> None:
        """Run script that leaves the page (a click on a link, a form's submit) and wait for the
        next page's load event."""
        async def go():
            self._load = self.loop.create_future()
            await self._send("Runtime.evaluate", {"expression": expression})
            await self._load
            await asyncio.sleep(0.3)
        self._run(go())

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (returned by value)."""
        result = self._run(self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                           "awaitPromise": True}))
        if result.get("exceptionDetails"):
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def boxes(self, selector: str) -> list:
        """``[{"id", "x", "y", "w", "h"}]`` of the elements matching ``selector``, in page coordinates."""
        js = ("JSON.stringify(Array.from(document.querySelectorAll(%s)).map(function (e) {"
              "var r = e.getBoundingClientRect(); return {id: e.id, x: r.left + scrollX, y: r.top + scrollY,"
              " w: r.width, h: r.height}; }))" % json.dumps(selector))
        return json.loads(self.evaluate(js))

    def screenshot(self, box: dict | None = None, fast: bool = True) -> bytes:
        """A PNG of ``box`` (page coordinates), or of the viewport. ``fast`` encodes quickly (larger
        file, simple filters that decode fast); ``fast=False`` compresses for keeping."""
        params = {"format": "png", "captureBeyondViewport": True, "optimizeForSpeed": fast}
        if box is not None:
            params["clip"] = {"x": box["x"], "y": box["y"], "width": max(1, box["w"]),
                              "height": max(1, box["h"]), "scale": 1}
        return base64.b64decode(self._run(self._send("Page.captureScreenshot", params))["data"])
