"""Regenerate ``oneflow_lite/_proto/*_pb2.py`` and ``*.pyi`` from ``protos/*.proto``.

Usage: ``python scripts/gen_protos.py [OUT_DIR]`` (default: the package's ``_proto``).
Needs the ``dev`` extra (grpcio-tools). protoc writes absolute imports
(``import attr_value_pb2``); they are rewritten to package-relative ones so the
modules import from inside ``oneflow_lite._proto``.
"""

from __future__ import annotations

import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "protos"
DEFAULT_OUT = ROOT / "oneflow_lite" / "_proto"
_ABSOLUTE_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)


def generated_files() -> dict[str, str]:
    """Run protoc on every .proto and return {file name: text}, imports made relative."""
    from grpc_tools import protoc

    protos = sorted(p.name for p in PROTO_DIR.glob("*.proto"))
    with tempfile.TemporaryDirectory() as tmp:
        args = ["protoc", f"-I{PROTO_DIR}", f"--python_out={tmp}", f"--pyi_out={tmp}", *protos]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed on {protos}")
        out = {}
        for path in sorted(pathlib.Path(tmp).iterdir()):
            text = path.read_text()
            out[path.name] = _ABSOLUTE_IMPORT.sub(r"from . import \1 as \2", text)
    return out


def main(argv: list[str]) -> int:
    out_dir = pathlib.Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in generated_files().items():
        (out_dir / name).write_text(text)
        print(f"wrote {out_dir / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
