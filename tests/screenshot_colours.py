"""Count the colours of a headless-Chromium screenshot (PNG bytes), to tell a rendered chart
from a blank or one-colour box. The browser tests (tests/ray/test_*_browser.py) import it as
``from screenshot_colours import colours, saturated_colours`` (pytest puts ``tests/`` on the path
for its conftest). Pillow decodes the PNG; it is in the ``test`` extra, not a dependency of the
package, because only these tests look at pictures.
"""
from __future__ import annotations

import io

import numpy as np
from PIL import Image, UnidentifiedImageError

__all__ = ["colours", "saturated_colours"]


def _rgb(png: bytes) -> np.ndarray:
    """``(pixels, 3)`` int32 RGB values of a PNG; alpha is dropped, greys become three equal channels."""
    try:
        with Image.open(io.BytesIO(png), formats=["PNG"]) as image:
            rgb = np.asarray(image.convert("RGB"), dtype=np.int32)
    except UnidentifiedImageError:
        raise ValueError("not a PNG image: a browser screenshot is asked for as PNG") from None
    return rgb.reshape(-1, 3)


def _distinct(rgb: np.ndarray) -> int:
    return int(np.unique((rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]).size)


def colours(png: bytes) -> int:
    """How many distinct RGB colours the image holds."""
    return _distinct(_rgb(png))


def saturated_colours(png: bytes, spread: int = 60) -> int:
    """Distinct colours whose channels differ by ``spread`` or more: chart colours, not the greys
    of text and borders."""
    rgb = _rgb(png)
    return _distinct(rgb[(rgb.max(axis=1) - rgb.min(axis=1)) >= spread])
