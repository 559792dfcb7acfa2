"""Reading .npz archives that may be hostile (``flow.load``, ``nn.Graph.load``)."""

from __future__ import annotations

import math
import zipfile

import numpy as np


# Note [Reading untrusted archives]
# A file to load may be hostile: truncated, bit-flipped, a ZIP bomb, or an .npy header declaring a shape
# far larger than its data (``np.load`` allocates the declared size before reading, so a 16-byte entry
# declaring 2**40 floats fails deep in NumPy, and one declaring 10 GB allocates it). ``read_npz`` reads
# an archive without trusting it: each entry's header must declare a plain dtype (numbers, bools, or raw
# bytes as bfloat16 is saved; no object, no structure) and a size that its uncompressed data holds; the
# entries together must fit the caller's limit (Note [Allocation limit] in interpreters/eager_local.py);
# nothing is extracted to disk, so names with ``..`` or ``/`` are only keys; a CRC mismatch is an error.
# Everything else is a RuntimeError naming the file.
def read_npz(f, name: str, who: str, limit: int) -> dict:
    """The arrays (writable, C or Fortran order as stored) of the .npz archive in the open binary file ``f``,
    read as Note [Reading untrusted archives] says, at most ``limit`` bytes in all; ``who`` (``flow.load``)
    starts the error messages."""
    try:
        with zipfile.ZipFile(f) as zf:
            infos = [i for i in zf.infolist() if i.filename.endswith(".npy")]
            total = sum(i.file_size for i in infos)
            if total > limit:
                raise RuntimeError(f"{who}: '{name}' declares {total} bytes of arrays, more than the allocation "
                                   f"limit of {limit} bytes")
            return {i.filename[:-4]: _read_member(zf, i, name, who) for i in infos}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zipfile.LargeZipFile,
            NotImplementedError) as e:
        raise RuntimeError(f"{who}: '{name}' is truncated or corrupt ({type(e).__name__}: {e})") from None


def _read_member(zf, info, name: str, who: str) -> np.ndarray:
    with zf.open(info) as m:
        version = np.lib.format.read_magic(m)
        if version not in ((1, 0), (2, 0), (3, 0)):
            raise ValueError(f"entry '{info.filename}' has .npy format version {version}")
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
            np.lib.format.read_array_header_2_0
        shape, fortran, dtype = read_header(m)
        if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in "biufV":
            raise ValueError(f"entry '{info.filename}' has dtype {dtype}; only numbers and bools are read (and "
                             f"bfloat16, saved as raw bytes)")
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > info.file_size - m.tell():
            raise ValueError(f"entry '{info.filename}' declares shape {shape} of {dtype} ({nbytes} bytes) but holds "
                             f"{info.file_size - m.tell()} bytes of data")
        array = np.empty(shape, dtype, order="F" if fortran else "C")
        view = memoryview(array.reshape(-1, order="A").view(np.uint8)) if nbytes else b""
        if nbytes and m.readinto(view) != nbytes:
            raise EOFError(f"entry '{info.filename}' ends early")
        m.read()  # to its end: zipfile checks the CRC there
    return array
