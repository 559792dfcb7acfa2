"""TensorBoard event files without TensorFlow or ``tensorboard``: the TFRecord framing (masked CRC-32C) and the few
protocol-buffer messages that scalars and text need, encoded by hand.

Note [Event files]
An event file is a sequence of records: ``uint64 length`` (little-endian), ``uint32 masked_crc32c(length bytes)``,
the data, ``uint32 masked_crc32c(data)``, where ``masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8`` (mod 2**32)
and CRC-32C is the Castagnoli polynomial (reflected 0x82f63b78). Each record is a serialized ``tensorflow.Event``:
``wall_time`` (1, double), ``step`` (2, int64), ``file_version`` (3, string: ``"brain.Event:2"`` in the first
record) or ``summary`` (5): ``Summary.value`` (1, repeated) of ``Summary.Value`` with ``tag`` (1),
``simple_value`` (2, float), ``metadata`` (9: ``SummaryMetadata.plugin_data`` (1) = ``PluginData`` with
``plugin_name`` (1) and ``content`` (2)) and ``tensor`` (8: ``TensorProto`` with ``dtype`` (1, DT_STRING = 7),
``tensor_shape`` (2: ``dim`` (2) = ``Dim.size`` (1)) and ``string_val`` (8)). TensorBoard reads these files.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time


def _crc_table() -> list:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data: bytes) -> bytes:
    """``data`` framed as one TFRecord."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))


# ---- protocol-buffer encoding (wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32) ------------
def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 values take ten bytes, as protobuf writes them
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    key = _varint(number << 3 | wire)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


def _int(number: int, n: int) -> bytes:
    return _field(number, 0, _varint(n))


def event(wall_time: float, step: int = 0, *, file_version: str | None = None, summary: bytes | None = None) -> bytes:
    out = _field(1, 1, struct.pack("<d", wall_time))
    if step:
        out += _int(2, step)
    if file_version is not None:
        out += _field(3, 2, file_version.encode())
    if summary is not None:
        out += _field(5, 2, summary)
    return out


def scalar_summary(tag: str, value: float) -> bytes:
    return _field(1, 2, _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", value)))


def text_summary(tag: str, text: str) -> bytes:
    """TensorBoard's text plugin: a 1-element DT_STRING tensor (what ``SummaryWriter.add_text`` writes)."""
    plugin = _field(1, 2, _field(1, 2, b"text") + _field(2, 2, b""))  # TextPluginData(version=0): empty
    tensor = _int(1, 7) + _field(2, 2, _field(2, 2, _int(1, 1))) + _field(8, 2, text.encode())
    value = _field(1, 2, tag.encode()) + _field(9, 2, plugin) + _field(8, 2, tensor)
    return _field(1, 2, value)


_uid_lock = threading.Lock()
_uid = [0]


class EventFileWriter:
    """Appends events to a new ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>`` file in ``log_dir``."""

    def __init__(self, log_dir: str, filename_suffix: str = ""):
        os.makedirs(log_dir, exist_ok=True)
        with _uid_lock:
            _uid[0] += 1
            n = _uid[0]
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{n}{filename_suffix}"
        self.path = os.path.join(log_dir, name)
        self._lock = threading.Lock()
        self._file = open(self.path, "wb")
        self.write(event(time.time(), file_version="brain.Event:2"))
        self.flush()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._file is None:
                raise RuntimeError(f"SummaryWriter: the event file {self.path} is closed")
            self._file.write(record(data))

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
