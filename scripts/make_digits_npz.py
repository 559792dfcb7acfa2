"""Build ``oneflow_lite/utils/data/_data/digits.npz`` from scikit-learn's copy of the 8x8 digits.

The source is ``sklearn/datasets/data/digits.csv.gz`` as shipped in the scikit-learn wheel (1,797 rows of
64 pixel counts 0..16 and a label 0..9). scikit-learn is not a dependency: download its wheel once and
point this script at it (or at the extracted ``digits.csv.gz``)::

    pip download scikit-learn --no-deps -d /tmp/sk
    python scripts/make_digits_npz.py /tmp/sk/scikit_learn-*.whl

The archive holds ``images`` (uint8, (1797, 8, 8), values 0..16), ``labels`` (uint8, (1797,)) in the
CSV's row order, and ``test_indices`` (int16, (360,), sorted): the fixed test split, the first 360 entries
of ``numpy.random.default_rng(0).permutation(1797)``. The permutation is stored rather than recomputed at
load time, so the split never depends on NumPy's random streams.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import zipfile
from pathlib import Path

import numpy as np

MEMBER = "sklearn/datasets/data/digits.csv.gz"
OUT = Path(__file__).resolve().parent.parent / "oneflow_lite" / "utils" / "data" / "_data" / "digits.npz"
NUM_SAMPLES, NUM_TEST, SPLIT_SEED = 1797, 360, 0


def read_csv_gz(source: Path) -> bytes:
    """The gzip bytes of digits.csv.gz, from a scikit-learn wheel or the file itself."""
    if source.suffix == ".whl":
        with zipfile.ZipFile(source) as wheel:
            return wheel.read(MEMBER)
    return source.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a scikit-learn wheel (.whl) or its digits.csv.gz")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output .npz (default: {OUT})")
    args = parser.parse_args()

    raw = read_csv_gz(args.source)
    print(f"digits.csv.gz: {len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()}")
    table = np.loadtxt(io.BytesIO(gzip.decompress(raw)), delimiter=",", dtype=np.int64)
    if table.shape != (NUM_SAMPLES, 65):
        raise SystemExit(f"expected a {NUM_SAMPLES}x65 table, got {table.shape}")
    pixels, labels = table[:, :64], table[:, 64]
    if pixels.min() < 0 or pixels.max() > 16 or set(np.unique(labels)) != set(range(10)):
        raise SystemExit("expected pixels in 0..16 and labels 0..9")

    test_indices = np.sort(np.random.default_rng(SPLIT_SEED).permutation(NUM_SAMPLES)[:NUM_TEST])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, images=pixels.reshape(-1, 8, 8).astype(np.uint8),
                        labels=labels.astype(np.uint8), test_indices=test_indices.astype(np.int16))
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes); per-class counts "
          f"all {np.bincount(labels).tolist()}, test {np.bincount(labels[test_indices]).tolist()}")


if __name__ == "__main__":
    main()
