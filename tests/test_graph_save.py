"""nn.Graph.save / nn.Graph.load: a saved graph runs in a fresh process without the model code and gives
bit-identical outputs; corrupt or mismatched files raise clear errors."""

import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import oneflow_lite as flow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Affine:
    """A minimal module (the Module API a graph uses)."""

    def __init__(self, rng):
        self.weight = flow.tensor(rng.standard_normal((3, 4)), dtype=flow.float32).requires_grad_()
        self.scale = flow.tensor(np.array([0.5, 1.0, 1.5, 2.0]), dtype=flow.float32)
        self.training = False

    def named_parameters(self):
        return iter([("weight", self.weight)])

    def named_buffers(self):
        return iter([("scale", self.scale)])

    def named_children(self):
        return iter([])

    def forward(self, x):
        return flow.tanh(x @ self.weight) * self.scale


class Predict(flow.nn.Graph):
    def __init__(self, model, bias):
        super().__init__()
        self.model = model
        self.bias = bias

    def build(self, x, extra):
        y = self.model(x) + self.bias * 2.0
        return {"y": y, "parts": [flow.relu(y), None, 7], "extra": extra["a"] - 1.0}


def make_graph():
    rng = np.random.default_rng(4)
    g = Predict(Affine(rng), flow.tensor(rng.standard_normal(4), dtype=flow.float32))
    x = flow.tensor(rng.standard_normal((5, 3)), dtype=flow.float32)
    extra = {"a": flow.tensor(rng.standard_normal(2), dtype=flow.float64)}
    return g, x, extra


def run_python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120, check=False)


def test_a_saved_graph_runs_in_a_fresh_process_with_identical_outputs(tmp_path):
    g, x, extra = make_graph()
    out = g(x, extra)
    path = tmp_path / "predict.graph"
    g.save(path)
    np.savez(tmp_path / "inputs.npz", x=x.numpy(), a=extra["a"].numpy())
    result = run_python(f"""
        import json, sys
        import numpy as np
        import oneflow_lite as flow
        assert "test_graph_save" not in sys.modules
        g = flow.nn.Graph.load({str(path)!r})
        inputs = np.load({str(tmp_path / 'inputs.npz')!r})
        out = g(flow.tensor(inputs["x"]), {{"a": flow.tensor(inputs["a"])}})
        np.savez({str(tmp_path / 'outputs.npz')!r}, y=out["y"].numpy(), relu=out["parts"][0].numpy(),
                 extra=out["extra"].numpy())
        print(json.dumps([out["parts"][1], out["parts"][2], sorted(out), g.name]))
    """)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [None, 7, ["extra", "parts", "y"], g.name]
    got = np.load(tmp_path / "outputs.npz")
    for key, want in (("y", out["y"]), ("relu", out["parts"][0]), ("extra", out["extra"])):
        assert got[key].dtype == want.numpy().dtype
        assert got[key].tobytes() == want.numpy().tobytes(), key


def test_load_round_trip_in_process(tmp_path):
    g, x, extra = make_graph()
    out = g(x, extra)
    g.save(tmp_path / "g.graph")
    loaded = flow.nn.Graph.load(tmp_path / "g.graph")
    again = loaded(x, extra)
    assert again["y"].numpy().tobytes() == out["y"].numpy().tobytes()
    assert again["parts"][1:] == [None, 7]
    assert sorted(loaded.variables()) == sorted(op.name for op in g.captured_job.net.op
                                                if op.HasField("variable_conf"))
    assert loaded.captured_job == g.captured_job
    assert "module model:" in repr(loaded) and "passes:" in repr(loaded)
    with pytest.raises(RuntimeError, match=rf"nn.Graph '{g.name}' was loaded from '.*g.graph' for the input signature "
                                           r"\(float32\[5, 3\], \{'a': float64\[2\]\}\) and has no build\(\) to capture "
                                           r"another"):
        loaded(flow.ones(2, 3), extra)


def test_a_loaded_training_graph_updates_its_own_variables(tmp_path):
    w = flow.tensor([1.0, 2.0], dtype=flow.float64).requires_grad_()

    @flow.nn.Graph.trace
    def step(x):
        loss = (x * w).sum()
        loss.backward()
        with flow.no_grad():
            w.sub_(w.grad * 0.5)
            w.grad = None
        return loss

    x = flow.tensor([1.0, 3.0], dtype=flow.float64)
    step(x)
    step.save(tmp_path / "step.graph")
    loaded = flow.nn.Graph.load(tmp_path / "step.graph")
    (var,) = loaded.variables().values()
    assert var.numpy().tolist() == [0.5, 0.5] and var is not w
    assert loaded(x).item() == 0.5 * 1 + 0.5 * 3
    assert var.numpy().tolist() == [0.0, -1.0] and w.numpy().tolist() == [0.5, 0.5]


# ---- corrupt and mismatched files -----------------------------------------------------------------
def _saved(tmp_path):
    g, x, extra = make_graph()
    g(x, extra)
    path = tmp_path / "ok.graph"
    g.save(path)
    return path


def _rewrite(path, out, change):
    """Copy the archive at ``path`` to ``out`` with ``change(entries)`` applied (name -> array)."""
    with np.load(path) as z:
        entries = {k: z[k] for k in z.files}
    change(entries)
    buf = io.BytesIO()
    np.savez(buf, **entries)
    out.write_bytes(buf.getvalue())
    return out


def _meta(entries):
    return json.loads(entries["__meta__"].tobytes())


def _set_meta(entries, meta):
    entries["__meta__"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)


def test_corrupt_files_raise_clear_errors(tmp_path):
    path = _saved(tmp_path)
    data = path.read_bytes()
    truncated = tmp_path / "truncated.graph"
    truncated.write_bytes(data[: len(data) // 2])
    flipped = tmp_path / "flipped.graph"
    flipped.write_bytes(data[:200] + bytes(b ^ 0xFF for b in data[200:260]) + data[260:])
    text = tmp_path / "text.graph"
    text.write_text("hello")
    for bad in (truncated, flipped, text):
        with pytest.raises(RuntimeError, match=rf"flow.nn.Graph.load: '.*{bad.name}' is not a valid saved graph: "):
            flow.nn.Graph.load(bad)
    with pytest.raises(FileNotFoundError):
        flow.nn.Graph.load(tmp_path / "missing.graph")


def test_mismatched_files_raise_clear_errors(tmp_path):
    path = _saved(tmp_path)

    def bad_var(e):
        e["var0"] = np.zeros((2, 2), e["var0"].dtype)

    def bad_job(e):
        e["__job__"] = np.frombuffer(b"\xff\xff\xff garbage", np.uint8)

    def bad_version(e):
        _set_meta(e, {**_meta(e), "version": 99})

    def other_format(e):
        _set_meta(e, {**_meta(e), "format": "something else"})

    def missing_var(e):
        del e["var1"]

    def renamed_vars(e):
        _set_meta(e, {**_meta(e), "variables": ["a", "b", "c"]})

    cases = [
        (bad_var, r"variable '.*' is declared float32\[.*\] but its value has shape \(2, 2\)"),
        (bad_job, r"the job proto does not parse"),
        (bad_version, r"format version 99; this version reads version 1"),
        (other_format, r"it was not written by nn.Graph.save\(\) \(format 'something else'\)"),
        (missing_var, r"no value for variable"),
        (renamed_vars, r"its variable values \['a', 'b', 'c'\] do not match the job's variable ops"),
    ]
    for change, message in cases:
        bad = _rewrite(path, tmp_path / f"{change.__name__}.graph", change)
        with pytest.raises(RuntimeError, match=rf"is not a valid saved graph: {message}"):
            flow.nn.Graph.load(bad)


def test_a_malformed_job_is_rejected(tmp_path):
    from oneflow_lite._proto import job_pb2
    path = _saved(tmp_path)

    def reorder(e):
        job = job_pb2.Job()
        job.ParseFromString(e["__job__"].tobytes())
        ops = list(job.net.op)
        del job.net.op[:]
        job.net.op.extend(ops[1:] + ops[:1])  # the input op last: its blob is read before it is made
        e["__job__"] = np.frombuffer(job.SerializeToString(), np.uint8)

    bad = _rewrite(path, tmp_path / "reordered.graph", reorder)
    with pytest.raises(RuntimeError, match=r"is not a valid saved graph: nn.Graph '.*': the job is malformed: op "
                                           r"'.*' reads blob '_Predict_\d+_input.0/out', which no earlier op produces"):
        flow.nn.Graph.load(bad)


def test_a_corrupt_file_fails_cleanly_in_a_fresh_process(tmp_path):
    path = _saved(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x5A
    bad = tmp_path / "bad.graph"
    bad.write_bytes(bytes(data))
    assert zipfile.is_zipfile(bad)
    result = run_python(f"""
        import oneflow_lite as flow
        try:
            flow.nn.Graph.load({str(bad)!r})
        except RuntimeError as e:
            print("RuntimeError:", e)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"RuntimeError: flow.nn.Graph.load: '{bad}' is not a valid saved graph:")
