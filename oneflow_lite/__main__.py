"""``python -m oneflow_lite``: look at the dispatcher, walk through one call, train a model.

    python -m oneflow_lite ops            registered ops, the keys that have handlers, and the functional API
    python -m oneflow_lite ops relu       relu's computed dispatch table (flow.dispatch.dump_table)
    python -m oneflow_lite ops relu --registrations   ... and every registration (flow.dispatch.dump)
    python -m oneflow_lite walkthrough    an eager walk-through of flow.relu(flow.tensor([-1.0, 2.0]))
    python -m oneflow_lite demo           train a digits classifier eagerly and as an nn.Graph (demo --help)
    python -m oneflow_lite demo --nproc 2 ... data-parallel over 2 processes (an MPI job)
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys

from oneflow_lite import demo, demo_walkthrough


def _parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The command-line parser and its ``demo`` subparser."""
    parser = argparse.ArgumentParser(
        prog="python -m oneflow_lite",
        description="oneflow_lite: a OneFlow-style tensor framework core on NumPy. "
                    "Inspect the dispatcher, walk one call through every layer, or train a model.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{ops,walkthrough,demo}")
    ops = sub.add_parser("ops", help="list registered ops, or print one op's dispatch table",
                         description="Without OP_TYPE: every registered op with the dispatch keys that have a "
                                     "handler and its kernels per device, then every function of the functional "
                                     "API with the functors it runs. With OP_TYPE: its computed dispatch "
                                     "table, as flow.dispatch.dump_table(OP_TYPE).")
    ops.add_argument("op_type", nargs="?", metavar="OP_TYPE", help="an op type, e.g. relu")
    ops.add_argument("--registrations", action="store_true",
                     help="also list every registration with its file:line (flow.dispatch.dump)")
    sub.add_parser("walkthrough", help="walk flow.relu(flow.tensor([-1.0, 2.0])) through every layer, eagerly",
                   description="Prints each layer the call passes: the functional function and its signatures, "
                               "the functor and its UserOpExpr, the dispatch key set and the handler chosen, "
                               "the meta-inference cache, the kernel chosen and the output.")
    demo_parser = sub.add_parser("demo", help="train a digits classifier eagerly and as an nn.Graph, and compare them",
                                 description=demo.DESCRIPTION)
    demo.add_arguments(demo_parser)
    return parser, demo_parser


def _list_ops(out) -> int:
    from oneflow_lite.dispatch.dispatcher import DISPATCHER

    rows = []
    for op_type in DISPATCHER.op_types():
        entry = DISPATCHER.entry(op_type)
        keys = " ".join(k.name for k in entry.registered_keys()) or "-"
        kernels = " ".join(f"{dev}:{len(regs)}" for dev, regs in sorted(entry.kernels.items())) or "-"
        rows.append((op_type, keys, kernels))
    header = ("op type", "keys with a handler", "kernels (device:count)")
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(2)]
    print(f"{header[0]:<{widths[0]}}  {header[1]:<{widths[1]}}  {header[2]}", file=out)
    for name, keys, kernels in rows:
        print(f"{name:<{widths[0]}}  {keys:<{widths[1]}}  {kernels}", file=out)
    print(f"{len(rows)} op types", file=out)
    composites = DISPATCHER.composites()
    print(f"\nfunctions with composite overloads (no op of their own; 'ops NAME' shows where each is defined): "
          f"{len(composites)}", file=out)
    if composites:
        print("  " + " ".join(composites), file=out)
    _list_functions(out)
    return 0


def _list_functions(out) -> None:
    """The functional API: each function with the functors its overloads run."""
    from oneflow_lite.functors.functional_api import FUNCTIONAL_API
    from oneflow_lite.functors.signature import Signature

    print(f"\nfunctional API (flow._C.<name>, also flow.<name>): {len(FUNCTIONAL_API)} functions", file=out)
    width = max(map(len, FUNCTIONAL_API))
    for name in sorted(FUNCTIONAL_API):
        functors = dict.fromkeys(Signature(s).functor_name for s in FUNCTIONAL_API[name])
        print(f"{name:<{width}}  => {', '.join(functors)}", file=out)


def _show_op(op_type: str, registrations: bool, out, err) -> int:
    from oneflow_lite.dispatch.dispatcher import DISPATCHER
    from oneflow_lite.dispatch.introspection import dump, dump_table

    if DISPATCHER.find_entry(op_type) is None and DISPATCHER.composite(op_type) is None:
        known = DISPATCHER.op_types() + DISPATCHER.composites()
        close = difflib.get_close_matches(op_type, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; run 'python -m oneflow_lite ops' to list them"
        print(f"error: unknown op type '{op_type}'{hint}", file=err)
        return 1
    print(f"dispatch table of '{op_type}':", file=out)
    print(dump_table(op_type), end="", file=out)
    if registrations:
        print(f"\nregistrations of '{op_type}':", file=out)
        print(dump(op_type), end="", file=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser, demo_parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "ops":
        if args.op_type is None:
            return _list_ops(sys.stdout)
        return _show_op(args.op_type, args.registrations, sys.stdout, sys.stderr)
    if args.command == "walkthrough":
        demo_walkthrough.run_walkthrough(sys.stdout)
        return 0
    error = demo.check_options(args)
    if error is not None:
        demo_parser.error(error)
    if args.nproc > 1 and demo.flow.env.get_world_size() == 1:  # start the MPI job that runs the demo
        argv = list(sys.argv[1:] if argv is None else argv)
        return demo.launch_data_parallel(args, argv[argv.index("demo") + 1:])
    demo.run(args, sys.stdout)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # stdout closed early (``... | head``): stop quietly, as other command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
