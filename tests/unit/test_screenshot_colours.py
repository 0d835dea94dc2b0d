"""The colour counts the browser tests judge screenshots by (tests/screenshot_colours.py): a blank
box is one colour, a chart's bars count as saturated and its grey rules and text do not, whatever
PNG mode the screenshot comes in."""
import io

import numpy as np
import pytest
from PIL import Image

from screenshot_colours import colours, saturated_colours


def _png(pixels: np.ndarray, mode: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").convert(mode).save(out, format="PNG")
    return out.getvalue()


def _chart() -> np.ndarray:
    chart = np.full((20, 20, 3), 255, dtype=np.uint8)
    chart[2:8, 2:8] = (76, 120, 168)                 # a blue bar
    chart[10:12, :] = (128, 128, 128)                # a grey rule
    chart[13, 1:4] = (150, 140, 120)                 # anti-aliased text: near-grey, not a chart colour
    chart[14:18, 5:9] = (228, 87, 86)                # a red bar
    return chart


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_colour_counts_tell_a_chart_from_a_blank_box(mode):
    assert colours(_png(np.full((20, 20, 3), 255, dtype=np.uint8), mode)) == 1
    png = _png(_chart(), mode)
    assert colours(png) == 5 and saturated_colours(png) == 2
    assert saturated_colours(png, spread=30) == 3     # the text's 30-step spread counts at a lower bar


def test_a_grey_screenshot_has_no_chart_colours():
    png = _png(_chart(), "L")
    assert colours(png) >= 3 and saturated_colours(png) == 0


def test_not_a_png_is_refused():
    with pytest.raises(ValueError, match="not a PNG"):
        colours(b"GIF89a....")
