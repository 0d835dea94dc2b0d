"""Read a PNG into a numpy array, and count what a screenshot holds (zlib + numpy, no Pillow).

Enough of the PNG format for screenshots: 8-bit greyscale, RGB or RGBA (with or without
alpha), not interlaced, all five scanline filters. A test uses ``colours(png)`` to tell a
rendered chart from a blank or one-colour box.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["decode_png", "colours", "saturated_colours"]

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}      # colour type -> channels (8-bit)


def _chunks(data: bytes):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file (bad signature)")
    pos = 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        yield kind, data[pos + 8:pos + 8 + length]
        pos += 12 + length


def _paeth_row(line: bytearray, prev: bytes, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
        line[i] = (line[i] + pred) & 0xFF


def _average_row(line: bytearray, prev: bytes, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        line[i] = (line[i] + ((a + prev[i]) >> 1)) & 0xFF


def decode_png(data: bytes) -> np.ndarray:
    """``(height, width, channels)`` uint8 pixels of an 8-bit, non-interlaced PNG."""
    header, idat = None, bytearray()
    for kind, body in _chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    if header is None:
        raise ValueError("PNG without an IHDR chunk")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in _CHANNELS or interlace:
        raise ValueError(f"only 8-bit non-interlaced grey/RGB/RGBA PNGs are read; got depth {depth}, "
                         f"colour type {colour_type}, interlace {interlace}")
    bpp = _CHANNELS[colour_type]
    stride = width * bpp
    raw = zlib.decompress(bytes(idat))
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:]
        if kind == 0:
            cur = line.copy()
        elif kind == 1:      # Sub: a running sum per channel along the row
            cur = (np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint64) & 0xFF).astype(np.uint8).ravel()
        elif kind == 2:      # Up
            cur = line + prev
        elif kind in (3, 4):  # Average, Paeth: each byte needs the one just rebuilt
            buf = bytearray(line.tobytes())
            (_average_row if kind == 3 else _paeth_row)(buf, prev.tobytes(), bpp)
            cur = np.frombuffer(bytes(buf), dtype=np.uint8)
        else:
            raise ValueError(f"unknown PNG filter {kind} on row {y}")
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)


def _rgb(pixels: np.ndarray) -> np.ndarray:
    if pixels.shape[2] >= 3:
        return pixels[:, :, :3]
    return np.repeat(pixels[:, :, :1], 3, axis=2)


def colours(png: bytes) -> int:
    """How many distinct RGB colours the image holds."""
    rgb = _rgb(decode_png(png)).reshape(-1, 3).astype(np.uint32)
    return int(np.unique((rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]).size)


def saturated_colours(png: bytes, spread: int = 60) -> int:
    """Distinct colours whose channels differ by ``spread`` or more: chart colours, not the greys
    of text and borders."""
    rgb = _rgb(decode_png(png)).reshape(-1, 3).astype(np.int32)
    keep = rgb[(rgb.max(axis=1) - rgb.min(axis=1)) >= spread].astype(np.uint32)
    return int(np.unique((keep[:, 0] << 16) | (keep[:, 1] << 8) | keep[:, 2]).size)
