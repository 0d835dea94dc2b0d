"""Frames of a planner snapshot file: a JSON header and named numeric arrays, as Arrow IPC.

A snapshot file (``snapshots/file.py``) is a run of frames, each one whole on its own::

    b"WAIPLANF"  u32 payload length  u32 CRC-32 of the payload  payload

The payload is an Arrow IPC stream: one record batch of one row whose columns are the arrays,
each as ``list<primitive>`` (a 2-D array flattened; its shape is in the header), compressed
with zstd by Arrow. A signed 1-D array that mostly rises (ordinals, ids, row indices) is
stored as its differences (named in the header's ``diff``): runs of small numbers compress
to almost nothing where the values themselves would not. The header is JSON, in the schema's metadata under ``whileai_ray_plan``.
(``store/`` is a leaf: this module knows arrays and JSON, nothing of the planner.)

Reading trusts nothing: the magic, the length, the CRC, Arrow's own full validation, a JSON
header (an object), and every column a list of one of the plain numeric types
(``DTYPES``) with no nulls whose length matches the shape the header gives. Nothing in
a frame is ever executed or unpickled. ``read_frames`` returns the whole frames from the start
of the file and says why it stopped early (a torn or foreign frame), if it did.
"""
from __future__ import annotations

import io
import json
import struct
import zlib
from types import ModuleType
from typing import IO, TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["MAGIC", "DTYPES", "encode_frame", "write_frame", "read_frames", "frame_payloads", "decode_frame",
           "decode_header", "decode_errors"]

# the only array types a snapshot holds (and the only ones its reader accepts)
DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "int64", "uint32", "uint64", "float64")
MAGIC = b"WAIPLANF"
_HEAD = struct.Struct("<8sII")
_META_KEY = b"whileai_ray_plan"


def _arrow() -> tuple[ModuleType, dict[np.dtype, pa.DataType], dict[pa.DataType, np.dtype]]:
    """pyarrow and the type maps, imported when a snapshot is first read or written (so
    ``import whileai_ray`` stays light)."""
    import pyarrow as pa
    types = {np.dtype(name): pa.from_numpy_dtype(np.dtype(name)) for name in DTYPES}
    return pa, types, {t: dt for dt, t in types.items()}


def encode_frame(header: dict, arrays: dict[str, np.ndarray], level: int = 6) -> bytes:
    """One frame as bytes: ``header`` (JSON-able; ``shapes`` is added) and ``arrays`` {name: ndarray}."""
    buf = io.BytesIO()
    write_frame(buf, header, arrays, level)
    return buf.getvalue()


class _Crc:
    """A write-through file that keeps the CRC-32 and the length of what went through it."""

    closed = False

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh, self.crc, self.n = fh, 0, 0

    def write(self, data: bytes) -> int:
        self.crc = zlib.crc32(data, self.crc)
        self.n += len(data)
        return self.fh.write(data)

    def flush(self) -> None:
        pass


def write_frame(fh: IO[bytes], header: dict, arrays: dict[str, np.ndarray], level: int = 6) -> int:
    """Write one frame at ``fh``'s position (a binary file open for writing and seeking); returns
    its bytes. The payload is streamed to the file as Arrow writes it (no copy of it is held: at a
    million prompts a whole state compresses to ~80 MB, which a frame built in memory held three
    times over), then the head is written over a placeholder whose length no file can satisfy, so
    a frame cut short anywhere reads as torn."""
    pa, _TYPES, _ = _arrow()
    fields, columns, shapes, diffs = [], [], {}, []
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        if arr.dtype not in _TYPES:
            raise TypeError(f"snapshot array {name!r} has type {arr.dtype}; use one of {DTYPES}")
        shapes[name] = list(arr.shape)
        if arr.ndim == 1 and arr.dtype.kind == "i" and len(arr) >= 8:
            d = np.diff(arr, prepend=arr.dtype.type(0))
            if np.count_nonzero(d < 0) * 8 < len(d):
                arr = d
                diffs.append(name)
        values = pa.array(arr.reshape(-1), type=_TYPES[arr.dtype])
        columns.append(pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values))
        fields.append(pa.field(name, columns[-1].type))
    meta = json.dumps({**header, "shapes": shapes, "diff": diffs}, separators=(",", ":"), allow_nan=False)
    schema = pa.schema(fields, metadata={_META_KEY: meta.encode()})
    batch = pa.record_batch(columns, schema=schema)
    options = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", compression_level=level))
    start = fh.tell()
    fh.write(_HEAD.pack(MAGIC, 0xFFFFFFFF, 0))
    through = _Crc(fh)
    with pa.ipc.new_stream(pa.PythonFile(through, mode="w"), schema, options=options) as writer:
        writer.write_batch(batch)
    end = fh.tell()
    fh.seek(start)
    fh.write(_HEAD.pack(MAGIC, through.n, through.crc))
    fh.seek(end)
    return end - start


def _decode(payload: bytes | memoryview) -> tuple[dict, dict[str, np.ndarray]]:
    pa, _, _BY_ARROW = _arrow()
    reader = pa.ipc.open_stream(pa.py_buffer(payload))
    raw = (reader.schema.metadata or {}).get(_META_KEY)
    if raw is None:
        raise ValueError("no planner snapshot header")
    header = json.loads(raw.decode("utf-8"))
    if not isinstance(header, dict) or not isinstance(header.get("shapes"), dict):
        raise ValueError("the header is not an object with shapes")
    # one column at a time (Arrow decompresses only the fields a read includes): a reader holds
    # the arrays and one column's Arrow buffers, not a whole decompressed base frame besides
    buf, arrays = pa.py_buffer(payload), {}
    for i, field in enumerate(reader.schema):
        if not pa.types.is_list(field.type) or field.type.value_type not in _BY_ARROW:
            raise ValueError(f"column {field.name!r} has type {field.type}")
        one = pa.ipc.open_stream(buf, options=pa.ipc.IpcReadOptions(included_fields=[i]))
        batch = one.read_next_batch()
        if i == 0:
            _no_second_batch(one)
        batch.validate(full=True)
        if batch.num_rows != 1:
            raise ValueError(f"{batch.num_rows} rows, expected 1")
        arrays[field.name] = _column(batch.column(0), field, header, _BY_ARROW)
        del batch, one
    if not len(reader.schema):
        reader.read_next_batch()
        _no_second_batch(reader)
    if set(arrays) != set(header["shapes"]):
        raise ValueError("the header's arrays and the columns differ")
    diffs = header.get("diff", [])
    if not isinstance(diffs, list) or not set(diffs) <= set(arrays):
        raise ValueError("the header names differences of arrays it does not hold")
    for name in diffs:
        if arrays[name].ndim != 1 or arrays[name].dtype.kind != "i":
            raise ValueError(f"column {name!r} cannot hold differences")
        np.cumsum(arrays[name], out=arrays[name])           # (in place: the array is the reader's own)
    return header, arrays


def _no_second_batch(reader: pa.ipc.RecordBatchStreamReader) -> None:
    try:
        reader.read_next_batch()
    except StopIteration:
        return
    raise ValueError("more than one batch")


def _column(column: pa.ListArray, field: pa.Field, header: dict, by_arrow: dict[pa.DataType, np.dtype]) -> np.ndarray:
    """The one row's list of ``column`` as an array of its own, shaped as the header says."""
    # the one row's list, without flatten() (which imports pyarrow.compute: a third of a second)
    start, stop = column.offsets[0].as_py(), column.offsets[len(column)].as_py()
    values = column.values.slice(start, stop - start)
    if values.null_count:
        raise ValueError(f"column {field.name!r} has nulls")
    shape = header["shapes"].get(field.name)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape) \
            or int(np.prod(shape, dtype=np.int64)) != len(values):
        raise ValueError(f"column {field.name!r} does not have the shape its header gives")
    # read from the Arrow data buffer (copied: writable): pyarrow's to_numpy() imports pandas,
    # a second of a resume's start
    dtype = np.dtype(by_arrow[field.type.value_type])
    out: np.ndarray = np.frombuffer(values.buffers()[1], dtype=dtype, count=len(values),
                                    offset=values.offset * dtype.itemsize).reshape(shape).copy()   # (its own)
    return out


def frame_payloads(data: bytes | bytearray | memoryview) -> tuple[list[memoryview], str | None]:
    """The payloads of the whole frames at the start of ``data`` (magic, length and CRC
    checked; nothing decoded): ``(payloads, why_it_stopped)``, ``why_it_stopped`` None when
    every byte belonged to a whole frame. The payloads are views of ``data``."""
    frames: list[memoryview] = []
    pos, view = 0, memoryview(data)
    while pos < len(data):
        if len(data) - pos < _HEAD.size:
            return frames, f"a torn frame at byte {pos}"
        magic, length, crc = _HEAD.unpack_from(data, pos)
        if magic != MAGIC:
            return frames, f"not a planner snapshot frame at byte {pos}"
        payload = view[pos + _HEAD.size:pos + _HEAD.size + length]
        if len(payload) != length:
            return frames, f"a torn frame at byte {pos}"
        if zlib.crc32(payload) != crc:
            return frames, f"a damaged frame at byte {pos} (CRC mismatch)"
        frames.append(payload)
        pos += _HEAD.size + length
    return frames, None


def decode_frame(payload: bytes | memoryview) -> tuple[dict, dict[str, np.ndarray]]:
    """``(header, arrays)`` of one frame's payload (each array one of its own); raises
    ValueError (or TypeError, KeyError, pyarrow's ArrowException) when it is not a good frame."""
    return _decode(payload)


def decode_header(payload: bytes | memoryview) -> dict:
    """The JSON header of one frame's payload, without decoding its arrays (the schema only);
    raises like :func:`decode_frame` when there is none."""
    pa, _, _ = _arrow()
    raw = (pa.ipc.open_stream(pa.py_buffer(payload)).schema.metadata or {}).get(_META_KEY)
    if raw is None:
        raise ValueError("no planner snapshot header")
    header = json.loads(raw.decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("the header is not an object")
    return header


def decode_errors() -> tuple[type[Exception], ...]:
    """What :func:`decode_frame` raises for a frame that is not good."""
    import pyarrow as pa
    return (ValueError, TypeError, KeyError, pa.ArrowException)


def read_frames(data: bytes) -> tuple[list[tuple[dict, dict[str, np.ndarray]]], str | None]:
    """The whole frames at the start of ``data``, decoded: ``([(header, arrays)], why_it_stopped)``;
    ``why_it_stopped`` is None when every byte belonged to a good frame."""
    payloads, stopped = frame_payloads(data)
    frames, pos = [], 0
    for payload in payloads:
        try:
            frames.append(_decode(payload))
        except decode_errors() as exc:
            return frames, f"an unreadable frame at byte {pos} ({exc})"
        pos += _HEAD.size + len(payload)
    return frames, stopped
