"""Elementwise formulas of many NumPy passes, run over cache-sized blocks.

Note [Blocked kernels]
A formula of many NumPy passes (the float32 erf and GELU kernels make 15 to 30) writes every pass into
scratch rows of its own (``out=``), never into new arrays: a new large array is fresh memory from the
system, paid in page faults at every call, which is much of the time of the same formula written with
operators. The passes run block by block over flat views, so the scratch rows are a block long and the
passes of a block stay in the core's cache while the whole arrays would not: measured on a loaded
2-core host, a float32 GELU forward and backward over blocks of 65536 elements took 0.6x the time of
whole-array passes on GPT-mid's (8, 128, 512) activations and on a (4096, 2048) array, the same on
GPT-tiny's (8, 32, 256) (benchmarks/bench_kernels.py times the kernels). A block allocates nothing;
arrays of one block or less run in one call. The scratch rows themselves are made once per thread and
kind (dtype, number of rows) and reused by every call: rows of 256 KiB are above glibc's mmap threshold,
so fresh ones are new pages from the system at each call (a GPT-tiny train step paid 100-400 page faults
in its GELU kernels).
"""

from __future__ import annotations

import threading

import numpy as np

BLOCK = 65536  # elements per block: a formula's four or five float32 rows (256 KiB each) stay in the cache; smaller
# blocks pay more in NumPy calls (about 30 per block) than they save
_BOOL = np.dtype(np.bool_)
_local = threading.local()  # .rows: (dtype, n_scratch, n_masks) -> the scratch rows, BLOCK long


def _scratch_rows(dtype, n_scratch: int, n_masks: int) -> list:
    """This thread's ``n_scratch`` rows of ``dtype`` and ``n_masks`` bool rows, BLOCK elements each (Note
    [Blocked kernels]); a formula never calls run_blocked, so one set per kind is never in use twice."""
    cache = getattr(_local, "rows", None)
    if cache is None:
        cache = _local.rows = {}
    key = (dtype, n_scratch, n_masks)
    rows = cache.get(key)
    if rows is None:
        rows = cache[key] = list(np.empty((n_scratch, BLOCK), dtype)) + list(np.empty((n_masks, BLOCK), _BOOL))
    return rows


def run_blocked(formula, out: np.ndarray, inputs, n_scratch: int, n_masks: int = 0) -> np.ndarray:
    """``formula(out_block, *input_blocks, *scratch_rows, *mask_rows)`` over blocks of the flat arrays.

    ``out`` is C-contiguous; every input has its shape (non-contiguous inputs are copied once). The scratch
    rows have ``out``'s dtype, the mask rows are bool."""
    size = out.size
    flat_out = out.reshape(-1)
    flats = [a.reshape(-1) if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(-1) for a in inputs]
    scratch = _scratch_rows(out.dtype, n_scratch, n_masks)
    if size <= BLOCK:
        formula(flat_out, *flats, *[s[:size] for s in scratch])
        return out
    for start in range(0, size, BLOCK):
        stop = start + BLOCK
        if stop > size:
            stop = size
            scratch = [s[:stop - start] for s in scratch]
        formula(flat_out[start:stop], *[f[start:stop] for f in flats], *scratch)
    return out
