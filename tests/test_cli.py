"""``python -m oneflow_lite``: ops, ops OP_TYPE, walkthrough, errors and help (demo: tests/test_demo.py)."""

import re
import subprocess
import sys

import pytest

from oneflow_lite.__main__ import main
from oneflow_lite.dispatch import dump_table
from oneflow_lite.dispatch.dispatcher import DISPATCHER


def _run(*args):
    return subprocess.run([sys.executable, "-m", "oneflow_lite", *args], check=False, capture_output=True, text=True,
                          timeout=120)


def test_ops_lists_registered_ops_with_their_keys():
    r = _run("ops")
    assert r.returncode == 0, r.stderr
    ops_part, composites_part, functions_part = r.stdout.split("\n\n")
    heading, names = composites_part.splitlines()
    assert re.fullmatch(r"functions with composite overloads \(no op of their own; 'ops NAME' shows where each is defined\): \d+",
                        heading)
    assert "relu6" in names.split() and "expand_as" in names.split()
    lines = ops_part.splitlines()
    assert re.fullmatch(r"op type +keys with a handler +kernels \(device:count\)", lines[0])
    relu = [line for line in lines if line.split()[0] == "relu"]
    assert len(relu) == 1
    # relu's kernels: its NumPy kernel and its bfloat16 kernel (kernels/cpu/bfloat16.py), each with its meta twin
    kernels = [reg.fn.__name__ for reg in DISPATCHER.entry("relu").kernels["cpu"]]
    assert kernels == ["relu_cpu", "relu_bfloat16_via_float32"]
    assert re.fullmatch(r"relu +Meta CPU CUDA PrivateUse1( \w+)* +cpu:2 meta:2", relu[0]), relu[0]
    names = [line.split()[0] for line in lines[1:-1]]
    assert names == sorted(names) and "relu" in names
    assert lines[-1] == f"{len(names)} op types"
    functions = functions_part.splitlines()
    assert re.fullmatch(r"functional API \(flow\._C\.<name>, also flow\.<name>\): \d+ functions", functions[0])
    assert re.fullmatch(r"add +=> Add, ScalarAdd, ScalarAddLeft", next(f for f in functions if f.startswith("add ")))


def test_ops_of_a_composite_says_where_it_is_defined():
    r = _run("ops", "relu6")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "dispatch table of 'relu6':\n" + dump_table("relu6")
    assert re.search(r"relu6: composite \(CompositeImplicitAutograd\)\n  => Relu6 defined at "
                     r"oneflow_lite/functors/activation.py:\d+\n", r.stdout)


def test_ops_relu_prints_its_dispatch_table():
    r = _run("ops", "relu")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "dispatch table of 'relu':\n" + dump_table("relu")
    assert "\nCPU: eager_local_interpreter [fallback] registered at oneflow_lite/interpreters/eager_local.py:" \
        in r.stdout
    assert "\n    kernel[cpu]: relu_cpu [dtype(x) in {" in r.stdout


def test_ops_relu_registrations():
    r = _run("ops", "relu", "--registrations")
    assert r.returncode == 0, r.stderr
    assert "\nregistrations of 'relu':\nname: relu\nschema: relu(Tensor x) -> (Tensor y)\n" in r.stdout


def test_unknown_op_is_an_error():
    r = _run("ops", "rleu")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "error: unknown op type 'rleu'; did you mean relu, relu6?\n"
    r = _run("ops", "zzzzzz")
    assert r.returncode == 1
    assert r.stderr == "error: unknown op type 'zzzzzz'; run 'python -m oneflow_lite ops' to list them\n"


def test_help_and_usage_errors():
    r = _run("--help")
    assert r.returncode == 0 and "usage: python -m oneflow_lite [-h] {ops,walkthrough,demo} ..." in r.stdout
    assert "list registered ops, or print one op's dispatch table" in r.stdout
    text = " ".join(r.stdout.split())  # argparse wraps the help lines
    assert "walkthrough walk flow.relu(flow.tensor([-1.0, 2.0])) through every layer, eagerly" in text
    assert "demo train a digits classifier eagerly and as an nn.Graph, and compare them" in text
    r = _run()
    assert r.returncode == 2 and "the following arguments are required: {ops,walkthrough,demo}" in r.stderr
    r = _run("frobnicate")
    assert r.returncode == 2 and "invalid choice: 'frobnicate'" in r.stderr


def test_walkthrough_runs_and_prints_every_layer():
    r = _run("walkthrough")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    expected_in_order = [
        "oneflow_lite eager walk-through of: y = flow.relu(flow.tensor([-1.0, 2.0]))",
        "[1] input: x = flow.tensor([-1.0, 2.0])",
        "key set of x: DispatchKeySet(CPU)",
        "[2] functional API: flow.relu is the function 'relu' of oneflow_lite.functional (flow._C.relu is flow.relu: True)",
        "0: Tensor (Tensor input, Bool inplace=False) => Relu    <- binds: (input=x, inplace=False)",
        "[3] functor 'Relu': oneflow_lite.functors.activation.ReluFunctor",
        "op_type_name: relu",
        "inputs: ('x_0',)   outputs: ('y_0',)",
        'op_type_name: "relu"',
        'input_order: "x"',
        "[4] OpInterpUtil.dispatch",
        "= DispatchKeySet(CPU)",
        "CPU: eager_local_interpreter [fallback] registered at oneflow_lite/interpreters/eager_local.py:",
        "flow.dispatch.dump_table('relu'):",
        "[5] EagerLocalInterpreter",
        "call 1: miss -> inferred out metas (TensorMeta(shape=(2,), dtype=oneflow_lite.float32, device=cpu:0),)",
        "call 2: hit -> the same InferResult object: True",
        "relu_cpu  predicate: dtype(x) in {",
        "[6] output: y = tensor([0., 2.], dtype=oneflow_lite.float32)",
        "NumPy reference np.maximum(x, 0) = [0.0, 2.0]; equal: True",
    ]
    pos = 0
    for text in expected_in_order:
        found = out.find(text, pos)
        assert found >= 0, f"missing (in order): {text!r}\n{out}"
        pos = found + len(text)


def test_main_in_process(capsys):
    assert main(["ops", "relu"]) == 0
    assert capsys.readouterr().out.startswith("dispatch table of 'relu':\nMeta: ")
    assert main(["ops", "no_such_op"]) == 1
    assert "unknown op type 'no_such_op'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["ops", "--bogus"])
    assert info.value.code == 2
