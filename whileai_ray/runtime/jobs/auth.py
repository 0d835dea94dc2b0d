"""The token ``whileai-ray submit`` and ``status`` show a Ray dashboard (plain logic, no Ray).

A Ray cluster started with ``RAY_AUTH_MODE=token`` (Ray >= 2.52; the files in ``cluster/`` turn
it on) refuses every Jobs API request without ``Authorization: Bearer <token>``: without it,
anyone who can reach port 8265 can submit a job and run code on the cluster. The token is found
where Ray itself looks, in this order: ``RAY_AUTH_TOKEN``, the file named by
``RAY_AUTH_TOKEN_PATH``, then ``~/.ray/auth_token`` (what ``ray get-auth-token --generate``
writes). When one is found it is always sent (a cluster without auth ignores it); a 401 or 403
from the dashboard becomes ``JobAuthError`` with what to do, instead of a bare HTTP error.
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_token", "auth_headers", "JobAuthError", "auth_failure"]

TOKEN_SOURCES = "RAY_AUTH_TOKEN, the file named by RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token"


class JobAuthError(ConnectionError):
    """The Ray dashboard refused us: no token, or the wrong one."""


def find_token(environ=None) -> tuple[str | None, str | None]:
    """``(token, where it came from)``, or ``(None, None)`` when there is none."""
    env = os.environ if environ is None else environ
    token = (env.get("RAY_AUTH_TOKEN") or "").strip()
    if token:
        return token, "RAY_AUTH_TOKEN"
    path = env.get("RAY_AUTH_TOKEN_PATH")
    if path:
        try:
            token = Path(path).expanduser().read_text().strip()
        except OSError as exc:
            raise JobAuthError(f"RAY_AUTH_TOKEN_PATH={path!r} cannot be read ({exc.strerror}); point it at "
                               "the file that holds the cluster's token, or unset it") from None
        if not token:
            raise JobAuthError(f"RAY_AUTH_TOKEN_PATH={path!r} is empty; it must hold the cluster's token")
        return token, f"RAY_AUTH_TOKEN_PATH ({path})"
    default = Path(env.get("HOME") or Path.home()) / ".ray" / "auth_token"
    try:
        token = default.read_text().strip()
    except OSError:
        return None, None
    return (token, str(default)) if token else (None, None)


def auth_headers(environ=None) -> dict:
    """The ``Authorization`` header for the Jobs API, or ``{}`` when no token is configured."""
    token, _ = find_token(environ)
    return {"Authorization": f"Bearer {token}"} if token else {}


def auth_failure(address: str, error: Exception, environ=None) -> JobAuthError | None:
    """A ``JobAuthError`` saying what to do when ``error`` is the dashboard refusing us, else None."""
    text = f"{type(error).__name__}: {error}"
    refused = ("401" in text or "Unauthorized" in text or "Authentication required" in text
               or type(error).__name__ == "AuthenticationError")
    wrong = "403" in text or "Forbidden" in text or "Invalid authentication token" in text
    if not (refused or wrong):
        return None
    _, source = find_token(environ)
    if source and (wrong or refused):
        return JobAuthError(
            f"the Ray dashboard at {address} refused the token from {source} (403 Forbidden: it is not this "
            "cluster's token). Print the right one on the head node with `ray get-auth-token` and put it in "
            "RAY_AUTH_TOKEN (or ~/.ray/auth_token).")
    return JobAuthError(
        f"the Ray dashboard at {address} requires a token (the cluster runs with RAY_AUTH_MODE=token) and none "
        f"was found: set {TOKEN_SOURCES}. `ray get-auth-token` on the head node prints it; see cluster/README.md "
        "('Reaching the dashboard safely').")
