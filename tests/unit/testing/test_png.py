"""The PNG reader the browser test counts colours with: every scanline filter, against pixels
encoded here by the PNG spec's own definitions (so a wrong reader cannot pass by symmetry)."""
import struct
import zlib

import numpy as np
import pytest

from whileai_ray.testing.png import colours, decode_png, saturated_colours


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def encode(pixels: np.ndarray, filters) -> bytes:
    """A PNG of ``pixels`` (h, w, 3 or 4) with row y filtered by ``filters[y % len(filters)]``."""
    h, w, ch = pixels.shape
    raw, prev = bytearray(), [0] * (w * ch)
    for y in range(h):
        line, kind = [int(v) for v in pixels[y].ravel()], filters[y % len(filters)]
        out = []
        for i, x in enumerate(line):
            a = line[i - ch] if i >= ch else 0
            b, c = prev[i], (prev[i - ch] if i >= ch else 0)
            pred = (0, a, b, (a + b) // 2, _paeth(a, b, c))[kind]
            out.append((x - pred) & 0xFF)
        raw += bytes([kind]) + bytes(out)
        prev = line

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 6 if ch == 4 else 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(raw))) + \
        chunk(b"IEND", b"")


@pytest.mark.parametrize("channels", [3, 4])
@pytest.mark.parametrize("filters", [[0], [1], [2], [3], [4], [0, 1, 2, 3, 4]])
def test_every_filter_decodes_to_the_pixels_encoded(channels, filters):
    pixels = np.random.default_rng(7).integers(0, 256, size=(9, 13, channels), dtype=np.uint8)
    assert np.array_equal(decode_png(encode(pixels, filters)), pixels)


def test_colour_counts_tell_a_chart_from_a_blank_box():
    blank = np.full((20, 20, 3), 255, dtype=np.uint8)
    assert colours(encode(blank, [1])) == 1
    chart = blank.copy()
    chart[2:8, 2:8] = (76, 120, 168)                 # a blue bar
    chart[10:12, :] = (128, 128, 128)                # a grey rule
    chart[14:18, 5:9] = (228, 87, 86)                # a red bar
    png = encode(chart, [4])
    assert colours(png) == 4 and saturated_colours(png) == 2


def test_not_a_png_is_refused():
    with pytest.raises(ValueError, match="not a PNG"):
        decode_png(b"GIF89a....")
