"""Run Python code the way a person runs it in a terminal: on a real pseudo-terminal.

Tests of what a terminal shows (the progress bar) must not fake ``isatty``: the child gets a
pty as stdin, stdout and stderr, sized like a terminal window (a pty nobody sized reports
0 x 0, which no terminal emulator does), and everything it draws comes back as text.
"""
from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["run_in_terminal"]


def run_in_terminal(code: str, columns: int = 120, rows: int = 30, timeout: float = 300.0,
                    env: dict | None = None) -> str:
    """Run ``python -c code`` on a pseudo-terminal; return all it wrote. A non-zero exit raises
    ``AssertionError`` with the output."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **(env or {})}
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave,
                            env=child_env, close_fds=True)
    os.close(slave)
    out = bytearray()
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:          # EIO: the child closed its side of the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    code_ = proc.wait(timeout=timeout)
    text = out.decode(errors="replace")
    if code_ != 0:
        raise AssertionError(f"exit {code_}:\n{text[-4000:]}")
    return text
