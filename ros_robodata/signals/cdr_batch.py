"""Many messages of one topic read from their CDR bytes at once: header stamps, JointState positions and
WrenchStamped forces as numpy arrays.

Offline, reading each message's fields in Python cost as much as reading the bag. A stream's messages share one
layout: the same frame_id, the same joint names, the same length; only stamps and values change. So the chunk's
bytes are laid side by side as a 2-D array, each row compared with the first one outside the changing fields, and
the fields of every row that matches are read as columns. A row that does not match (another length, other names,
big-endian data) is left to the per-message readers (signals/read.py), so the batch never changes a value.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

from ros_robodata.signals.cdr import header_stamp_ns

_U32 = struct.Struct('<I')
_LE = (b'\x00\x01', b'\x00\x03')  # CDR_LE, PL_CDR_LE, as the per-message readers accept
_SMALL = 4096  # messages up to this size (on average) are joined into one buffer to read their stamps


def stamps_of(datas: Sequence[bytes | memoryview]) -> np.ndarray:
    """Each message's header stamp (ns) as signals.cdr.header_stamp_ns reads it, 0 where it gives None (the
    timing checks treat a missing and a zero stamp alike)."""
    n = len(datas)
    out = np.zeros(n, dtype=np.int64)
    if not n:
        return out
    lengths = np.fromiter(map(len, datas), dtype=np.int64, count=n)
    if lengths.sum() > _SMALL * n:  # images, point clouds: few messages, not worth joining
        for i, data in enumerate(datas):
            out[i] = header_stamp_ns(data) or 0
        return out
    buf = np.frombuffer(b''.join(datas), dtype=np.uint8)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    ok = lengths >= 12
    head = buf[np.minimum(starts[:, None] + np.arange(12), len(buf) - 1)]  # n x 12; rows under 12 bytes unused
    kind = head[:, 1]
    le = head[:, 4:12].copy()
    sec = le[:, :4].copy().view('<i4')[:, 0].astype(np.int64)
    nsec = le[:, 4:].copy().view('<u4')[:, 0].astype(np.int64)
    sec_be = le[:, :4].copy().view('>i4')[:, 0].astype(np.int64)
    nsec_be = le[:, 4:].copy().view('>u4')[:, 0].astype(np.int64)
    out = np.where(kind == 1, sec * 1_000_000_000 + nsec, sec_be * 1_000_000_000 + nsec_be)
    return np.where(ok & ((kind == 1) | (kind == 0)), out, 0)


def _align(offset: int, size: int) -> int:
    return offset + (-(offset - 4) % size)


def _after_header(data: bytes | memoryview) -> int:
    (length,) = _U32.unpack_from(data, 12)
    return 16 + length


def _rows(datas: Sequence[bytes | memoryview], fixed_end: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows (bytes side by side) of the messages that share the first one's length and its bytes outside
    the stamp (bytes 4..12) up to `fixed_end`, and which messages those are."""
    first = datas[0]
    size = len(first)
    same = np.fromiter((len(d) == size for d in datas), dtype=bool, count=len(datas))
    picked = [d for d, s in zip(datas, same, strict=True) if s]
    rows = np.frombuffer(b''.join(picked), dtype=np.uint8).reshape(len(picked), size)
    template = rows[0]
    match = (rows[:, :4] == template[:4]).all(axis=1) & (rows[:, 12:fixed_end] == template[12:fixed_end]).all(axis=1)
    full = np.zeros(len(datas), dtype=bool)
    full[np.flatnonzero(same)[match]] = True
    return rows[match], full


def _stamps(rows: np.ndarray) -> np.ndarray:
    sec = rows[:, 4:8].copy().view('<i4')[:, 0].astype(np.int64)
    nsec = rows[:, 8:12].copy().view('<u4')[:, 0].astype(np.int64)
    return sec * 1_000_000_000 + nsec


def _first_little_endian(datas: Sequence[bytes | memoryview]) -> memoryview | None:
    """The first message, when there is one and it is little-endian CDR long enough for a header (the layout the
    batch readers take from it); None sends the caller to the per-message readers."""
    if not datas:
        return None
    first = memoryview(datas[0])
    return first if len(first) >= 20 and bytes(first[:2]) in _LE else None


def joint_states_of(datas: Sequence[bytes | memoryview]
                    ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray] | None:
    """(names, stamps, positions n x joints, which messages those rows are) for the messages that share the
    first one's layout; None when the first one is not a plain little-endian JointState."""
    first = _first_little_endian(datas)
    if first is None:
        return None
    try:
        offset = _align(_after_header(first), 4)
        (count,) = _U32.unpack_from(first, offset)
        offset += 4
        names = []
        for _ in range(count):
            offset = _align(offset, 4)
            (length,) = _U32.unpack_from(first, offset)
            names.append(bytes(first[offset + 4:offset + 3 + length]).decode('utf-8'))
            offset += 4 + length
        offset = _align(offset, 4)
        (n,) = _U32.unpack_from(first, offset)
        start = _align(offset + 4, 8)
    except (struct.error, UnicodeDecodeError):
        return None
    if start + 8 * n > len(first):
        return None
    rows, which = _rows(datas, start)
    positions = rows[:, start:start + 8 * n].copy().view('<f8')
    return names, _stamps(rows), positions, which


def wrenches_of(datas: Sequence[bytes | memoryview]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(stamps, forces n x 3, which messages) of the WrenchStamped messages sharing the first one's layout."""
    first = _first_little_endian(datas)
    if first is None:
        return None
    try:
        start = _align(_after_header(first), 8)
    except struct.error:
        return None
    if start + 48 > len(first):
        return None
    rows, which = _rows(datas, start)
    return _stamps(rows), rows[:, start:start + 24].copy().view('<f8'), which
