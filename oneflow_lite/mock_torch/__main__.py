"""``python -m oneflow_lite.mock_torch run script.py [args]``: run an unmodified PyTorch script on oneflow_lite."""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from oneflow_lite import mock_torch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m oneflow_lite.mock_torch",
        description="Run a PyTorch script with `import torch` resolving to oneflow_lite (flow.mock_torch).")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run SCRIPT with its arguments under mock_torch")
    run.add_argument("--verbose", action="store_true", help="print each torch module as it is mapped")
    run.add_argument("script", help="the Python file to run (as __main__)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    args = parser.parse_args(argv)
    sys.argv = [args.script, *args.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))  # as `python script.py` does
    mock_torch.enable(verbose=args.verbose)
    try:
        runpy.run_path(args.script, run_name="__main__")
    finally:
        mock_torch.disable()
    return 0


if __name__ == "__main__":
    sys.exit(main())
