"""The fast paths of the eager hot path and of compiled graphs give what the general code gives.

Each fast path (Note [Functional fast path], Note [Promotion fast path], Note [Eager fast path],
Note [Kernels that write in place], Note [Stealing the gradient], Note [Assigns written in place])
is exercised by calling the same thing several times, so the first call takes the general path and
the later ones the fast path, and every result is compared with NumPy or hand-computed values.
"""

import gc
import itertools
import pickle
import weakref

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.dispatch.kernel_predicate import dtype_in
from oneflow_lite.framework.attr import AttrMap
from oneflow_lite.framework.dtype import FLOATING_DTYPES
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import register_user_op
from oneflow_lite.functors.functional import FunctionalFunction
from oneflow_lite.functors.registry import functor
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.kernels.cpu.bfloat16 import Float32Compute

_ids = itertools.count()


def _f32(values):
    return np.asarray(values, np.float32)


# ---- functional fast path ----------------------------------------------------------------------------
def test_repeated_calls_pick_the_overload_of_their_argument_types():
    a, b = _f32([1.5, -2.0, 3.0]), _f32([0.5, 4.0, -1.0])
    x, y = flow.tensor(a), flow.tensor(b)
    for _ in range(3):  # the second round runs from the remembered plans
        np.testing.assert_array_equal(flow.add(x, y).numpy(), a + b)
        np.testing.assert_array_equal(flow.add(x, 2.0).numpy(), a + np.float32(2.0))
        np.testing.assert_array_equal(flow.mul(x, 3).numpy(), a * 3)
        np.testing.assert_array_equal(flow.mul(x, y).numpy(), a * b)
        assert flow.mul(x, True).dtype is flow.float32
        i = flow.tensor(np.array([1, 2, 3], np.int64))
        assert flow.mul(i, 2.5).dtype is flow.float32 and flow.mul(i, 2.5).tolist() == [2.5, 5.0, 7.5]
        assert flow.mul(i, True).dtype is flow.int64


def test_keyword_calls_are_planned_by_keyword_names():
    a, b = _f32([1.0, 2.0]), _f32([10.0, 20.0])
    x, y = flow.tensor(a), flow.tensor(b)
    for _ in range(3):
        np.testing.assert_array_equal(flow.add(x, y, alpha=2).numpy(), a + 2 * b)
        np.testing.assert_array_equal(flow.add(x, other=y).numpy(), a + b)
        np.testing.assert_array_equal(flow.add(input=x, other=y, alpha=0.5).numpy(), a + 0.5 * b)
    z = flow.tensor(a.copy())
    for k in range(1, 4):
        z.add_(y, alpha=-1)  # Tensor.add_ passes inplace=True as a keyword
        np.testing.assert_array_equal(z.numpy(), a - k * b)


def test_converted_arguments_are_not_planned_but_still_work():
    a = _f32([-1.0, 2.0])
    x = flow.tensor(a)
    for _ in range(3):  # an int for a Float parameter is converted: always the slow path
        np.testing.assert_allclose(flow.nn.functional.leaky_relu(x, 1).numpy(), np.where(a > 0, a, a * 1.0))
    assert not any(int in (k if isinstance(k, tuple) else (k,)) for k in flow.nn.functional.leaky_relu._plans)


def test_planned_calls_pass_the_signature_defaults_not_the_functors():
    name = f"FastPathDefaults{next(_ids)}"

    @functor(name)
    class Defaults:
        def __call__(self, x, scale=100.0, flag=True):  # differ from the signature's defaults
            return x, scale, flag

    f = FunctionalFunction("defaults", [f"Tensor (Tensor x, Float scale=2.0, Bool flag=False) => {name}"])
    x = flow.tensor(_f32([1.0]))
    for _ in range(3):
        assert f(x) == (x, 2.0, False)
        assert f(x, 3.5) == (x, 3.5, False)
        assert f(x, flag=True) == (x, 2.0, True)


def test_a_bad_call_after_planned_ones_still_raises():
    x = flow.tensor(_f32([1.0]))
    flow.relu(x)
    flow.relu(x)
    with pytest.raises(TypeError, match="relu"):
        flow.relu("not a tensor")
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        flow.relu(x, nope=True)


def _layer_norm_ref(a, n_dims, eps=1e-5):
    axes = tuple(range(a.ndim - n_dims, a.ndim))
    mean = a.mean(axis=axes, keepdims=True)
    return (a - mean) / np.sqrt(((a - mean) ** 2).mean(axis=axes, keepdims=True) + eps)


def test_sequence_arguments_are_planned_and_give_the_general_results():
    a = np.arange(24, dtype=np.float32).reshape(4, 6) / 7
    x = flow.tensor(a)
    F = flow.nn.functional
    for _ in range(3):  # the later rounds run from plans (Note [Planned sequences])
        np.testing.assert_allclose(F.layer_norm(x, (6,)).numpy(), _layer_norm_ref(a, 1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(F.layer_norm(x, [4, 6]).numpy(), _layer_norm_ref(a, 2), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(F.layer_norm(x, normalized_shape=(6,), eps=0.5).numpy(),
                                   _layer_norm_ref(a, 1, 0.5), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(x.view(2, -1).numpy(), a.reshape(2, 12))
        np.testing.assert_array_equal(x.view(3, 2, 4).numpy(), a.reshape(3, 2, 4))
        np.testing.assert_array_equal(x.reshape((2, -1)).numpy(), a.reshape(2, 12))
        np.testing.assert_array_equal(x.reshape([-1]).numpy(), a.reshape(-1))
        np.testing.assert_array_equal(x.reshape(x.shape[::-1]).numpy(), a.reshape(6, 4))
        np.testing.assert_array_equal(x.permute(1, 0).numpy(), a.T)
        np.testing.assert_array_equal(x.permute((1, 0)).numpy(), a.T)
        parts = x.split([2, 4], 1)
        assert len(parts) == 2
        np.testing.assert_array_equal(parts[1].numpy(), a[:, 2:])
        assert [p.shape[0] for p in x.split(3, 0)] == [3, 1]
        np.testing.assert_array_equal(flow.cat([x, x], 1).numpy(), np.concatenate([a, a], 1))
        np.testing.assert_array_equal(flow.cat((x, x, x)).numpy(), np.concatenate([a, a, a]))
        np.testing.assert_array_equal(x.reshape([np.int64(3), 8]).numpy(), a.reshape(3, 8))  # slow path
        np.testing.assert_array_equal(x.view(-1).numpy(), a.reshape(-1))  # a lone int: a 1-d shape
        np.testing.assert_allclose(flow.nn.functional.avg_pool2d(x.view(1, 1, 4, 6), 2).numpy(),
                                   a.reshape(2, 2, 3, 2).mean(axis=(1, 3))[None, None], rtol=1e-6)
    assert (flow.Tensor, tuple) in flow.reshape._plans and (flow.Tensor, int, int) in flow.view._plans
    assert (flow.Tensor, tuple) in F.layer_norm._plans and (list, int) in flow.cat._plans


def test_planned_sequence_calls_check_their_contents_every_call():
    x = flow.tensor(np.ones((4, 6), np.float32))
    F = flow.nn.functional
    for _ in range(2):
        F.layer_norm(x, (6,))
        F.layer_norm(x, normalized_shape=(6,))
        x.reshape((2, -1))
        flow.cat([x, x])
        flow.split(x, [2, 4], 1)
    with pytest.raises(TypeError, match=r"layer_norm\(\): argument 'normalized_shape' \(position 2\) must be int or "
                                        r"tuple of ints, not tuple"):
        F.layer_norm(x, (6.0,))
    with pytest.raises(TypeError, match=r"argument 'normalized_shape' \(keyword\) must be int or tuple of ints"):
        F.layer_norm(x, normalized_shape=("6",))
    with pytest.raises(TypeError, match=r"reshape\(\): argument 'shape' \(position 2\) must be int or tuple of ints"):
        x.reshape((2, None))
    with pytest.raises(TypeError, match="cat"):
        flow.cat([x, 1])
    with pytest.raises(TypeError, match="split"):
        flow.split(x, [2, "4"], 1)
    with pytest.raises(TypeError, match="reshape"):
        x.reshape((True, 24))  # bool is not an int here
    np.testing.assert_array_equal(flow.split(x, [2, 4], 1)[0].numpy(), np.ones((4, 2), np.float32))
    roll = [flow.roll(x, [1, 2], [0, 1]) for _ in range(3)][-1]
    np.testing.assert_array_equal(roll.numpy(), np.roll(np.ones((4, 6), np.float32), (1, 2), (0, 1)))
    with pytest.raises(TypeError, match=r"roll\(\): argument 'dims' \(position 3\) must be int or tuple of ints, "
                                        r"not list"):
        flow.roll(x, [1, 2], [0, 1.5])  # the first list passed its check: the error still sees the lists given


def test_fixed_size_list_plans_check_the_length():
    a = np.arange(32, dtype=np.float32).reshape(1, 1, 4, 8)
    x = flow.tensor(a)
    ref = a.reshape(1, 1, 2, 2, 4, 2).mean(axis=(3, 5))
    for _ in range(3):
        np.testing.assert_allclose(flow.nn.functional.avg_pool2d(x, (2, 2)).numpy(), ref)
        np.testing.assert_allclose(flow.nn.functional.avg_pool2d(x, [2]).numpy(), ref)  # one int, repeated
    with pytest.raises(TypeError, match="kernel_size' must have 2 elements, got 3"):
        flow.nn.functional.avg_pool2d(x, (2, 2, 2))


# ---- promotion fast path ------------------------------------------------------------------------------
def test_scalar_operands_zero_signs_and_nan_are_kept_apart():
    a = _f32([1.0, -2.0])
    x = flow.tensor(a)
    for _ in range(2):
        pos, neg = (x * 0.0).numpy(), (x * -0.0).numpy()
        np.testing.assert_array_equal(np.signbit(pos), np.signbit(a * np.float32(0.0)))
        np.testing.assert_array_equal(np.signbit(neg), np.signbit(a * np.float32(-0.0)))
        assert np.isnan((x * float("nan")).numpy()).all()
        np.testing.assert_array_equal((x - 0.5).numpy(), a - np.float32(0.5))
        np.testing.assert_array_equal((x + 1e10).numpy(), a + np.float32(1e10))
    hv = np.array([1e-3, -2e-2], np.float16)
    h = flow.tensor(hv)
    expected = (hv.astype(np.float32) * np.float32(1e6)).astype(np.float16)  # in float32, rounded once
    for _ in range(2):  # float16 times an operand beyond its range
        r = (h * 1e6).numpy()
        assert r.dtype == np.float16 and np.isfinite(r).all()
        np.testing.assert_array_equal(r, expected)


def test_attr_maps_are_typed_hashable_and_picklable():
    one, one_f, true = AttrMap({"n": 1}), AttrMap({"n": 1.0}), AttrMap({"n": True})
    assert one != one_f and one != true and one_f != true
    assert AttrMap({"n": 1}) == one and hash(AttrMap({"n": 1})) == hash(one)
    assert AttrMap({"v": 0.0}) != AttrMap({"v": -0.0})
    assert AttrMap({"v": float("nan")}) == AttrMap({"v": float("nan")})
    assert len({one, AttrMap({"n": 1}), one_f}) == 2
    m = AttrMap({"axis": (0, 1), "keepdims": False})
    assert pickle.loads(pickle.dumps(m)) == m and list(m) == ["axis", "keepdims"] and m["axis"] == (0, 1)
    assert "axis" in m and ("axis", (tuple, ((int, 0), (int, 1)))) not in m
    with pytest.raises(TypeError, match="immutable"):
        m["axis"] = (1,)


def test_relu_keeps_every_numeric_dtype():
    for dt in (np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64):
        a = np.array([0, 3, 5] if dt == np.uint8 else [-3, 0, 5], dt)
        for _ in range(2):
            r = flow.relu(flow.tensor(a)).numpy()
            assert r.dtype == dt and r.flags.writeable
            np.testing.assert_array_equal(r, np.maximum(a, np.zeros((), dt)))
    assert flow.relu(flow.tensor(np.float32(-2.0))).item() == 0.0  # 0-d: NumPy gives a scalar, made an array


# ---- eager fast path ------------------------------------------------------------------------------------
@pytest.fixture
def flaky_op():
    """A unary op whose kernel returns float64 from its third call on: a wrong kernel the fast path must catch."""
    name = f"fast_path_flaky_{next(_ids)}"
    definition = register_user_op(name, inputs=["x"], outputs=["y"],
                                  infer_shape=lambda ctx: ctx.shape("x"), infer_dtype=lambda ctx: ctx.dtype("x"))
    calls = itertools.count()

    def kernel(ctx, x):
        return x * 2 if next(calls) < 2 else (x * 2).astype(np.float64)

    reg = DISPATCHER.register_kernel(name, "cpu", kernel, predicate=dtype_in("x", *FLOATING_DTYPES))
    yield OpBuilder(name).input("x").output("y").build()
    reg.remove()
    definition.remove()


def test_kernel_results_are_checked_on_every_call(flaky_op):
    x = flow.tensor(_f32([1.0, 2.0]))
    for _ in range(2):
        np.testing.assert_array_equal(dispatch(flaky_op, (x,))[0].numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="kernel produced output 'y_0' with shape \\(2,\\) and dtype float64"):
        dispatch(flaky_op, (x,))


def test_kernels_registered_or_removed_later_replace_the_ready_calls(flaky_op):
    """Note [Eager fast path]: a kernel change empties every bound expr's ready calls."""
    x = flow.tensor(_f32([1.0, 2.0]))
    np.testing.assert_array_equal(dispatch(flaky_op, (x,))[0].numpy(), [2.0, 4.0])  # (its kernel is right twice)
    assert flaky_op._fast  # the next call would run from the ready call
    reg = DISPATCHER.register_kernel(flaky_op.op_type_name, "cpu", lambda ctx, a: a * 10, priority=5)
    assert not flaky_op._fast
    for _ in range(2):
        np.testing.assert_array_equal(dispatch(flaky_op, (x,))[0].numpy(), [10.0, 20.0])
    reg.remove()
    assert not flaky_op._fast
    np.testing.assert_array_equal(dispatch(flaky_op, (x,))[0].numpy(), [2.0, 4.0])  # the first kernel again


def test_plain_dict_attrs_and_other_op_exprs_take_the_general_path():
    x = flow.tensor(_f32([[1.0, 2.0], [3.0, 5.0]]))
    op = OpBuilder("reduce_sum").input("input_tensor").output("output_tensor").build()
    for _ in range(3):  # a dict does not hash: never a ready call, always the same result
        np.testing.assert_array_equal(dispatch(op, (x,), {"axis": [1], "keepdims": False})[0].numpy(), [3.0, 8.0])
    assert all(type(k[0]) is not dict for k in op._fast)


def test_views_share_the_version_counter_on_the_fast_path():
    x = flow.tensor(np.arange(6, dtype=np.float32))
    for _ in range(2):
        v = x.reshape(2, 3)
        before = v._version
        x.add_(flow.tensor(np.ones(6, np.float32)))
        assert v._version == before + 1 and np.shares_memory(v.numpy(), x.numpy())


@pytest.fixture
def flaky_pair_op():
    """A two-output op whose kernel returns a wrong second output (float64, then a wrong shape) from its third
    call on: the several-output fast path must catch both."""
    name = f"fast_path_flaky_pair_{next(_ids)}"
    definition = register_user_op(name, inputs=["x"], outputs=["y", "z"],
                                  infer_shape=lambda ctx: (ctx.shape("x"),) * 2,
                                  infer_dtype=lambda ctx: (ctx.dtype("x"),) * 2)
    calls = itertools.count()

    def kernel(ctx, x):
        k = next(calls)
        z = x + 1 if k < 2 else (x + 1).astype(np.float64) if k == 2 else np.concatenate([x, x])
        return x * 2, z

    reg = DISPATCHER.register_kernel(name, "cpu", kernel, predicate=dtype_in("x", *FLOATING_DTYPES))
    yield OpBuilder(name).input("x").output("y").output("z").build()
    reg.remove()
    definition.remove()


def test_several_output_results_are_checked_on_every_call(flaky_pair_op):
    x = flow.tensor(_f32([1.0, 2.0]))
    for _ in range(2):
        y, z = dispatch(flaky_pair_op, (x,))
        np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
        np.testing.assert_array_equal(z.numpy(), [2.0, 3.0])
    assert flaky_pair_op._fast  # the third and fourth calls run from the ready call
    with pytest.raises(RuntimeError, match="kernel produced output 'z_0' with shape \\(2,\\) and dtype float64"):
        dispatch(flaky_pair_op, (x,))
    with pytest.raises(RuntimeError, match="kernel produced output 'z_0' with shape \\(4,\\) and dtype float32"):
        dispatch(flaky_pair_op, (x,))


def test_several_output_views_share_the_version_counter_on_the_fast_path():
    x = flow.tensor(np.arange(6, dtype=np.float32))
    for _ in range(3):
        a, b = flow.split(x, [2, 4])
        np.testing.assert_array_equal(a.numpy(), [0.0, 1.0])
        np.testing.assert_array_equal(b.numpy(), [2.0, 3.0, 4.0, 5.0])
        before = a._version, b._version
        x.mul_(1.0)
        assert (a._version, b._version) == (before[0] + 1, before[1] + 1)
        assert np.shares_memory(b.numpy(), x.numpy())
    m = flow.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    for _ in range(2):  # along a later axis
        p, q = m.split([1, 3], dim=1)
        np.testing.assert_array_equal(q.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1:])
        assert q._vc is m._vc


def test_several_output_results_of_fresh_memory_are_not_views():
    x, w, b = flow.tensor(_f32([[1.0, 2.0], [3.0, 5.0]])), flow.ones(2), flow.zeros(2)
    for _ in range(3):
        a = x.numpy().astype(np.float64)
        d = a - a.mean(1, keepdims=True)
        y = flow.nn.functional.layer_norm(x, (2,), w, b)
        np.testing.assert_allclose(y.numpy(), d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5), rtol=1e-6)
        assert y._vc is None or y._vc is not x._vc
        x.add_(flow.ones(2, 2))  # y does not see x's writes
        assert y._version == 0


def test_a_result_over_an_inputs_foreign_buffer_is_a_view_of_it():
    """An input whose memory belongs to a non-array (an ``as_strided`` view, a bytes buffer): the overlap
    test decides, on the fast path too."""
    owner = np.arange(8, dtype=np.float32)
    strided = np.lib.stride_tricks.as_strided(owner, (4,), (8,))  # its base is NumPy's DummyArray
    for _ in range(2):
        x = flow.Tensor._make(strided, flow.tensor(strided.copy())._meta)
        v = x.view(2, 2)
        assert v._vc is x._vc and x._vc is not None


def test_in_place_writes_go_into_the_tensors_buffer():
    a, b = _f32([1.0, 2.0, 3.0]), _f32([0.5, 0.5, 0.5])
    x, y = flow.tensor(a.copy()), flow.tensor(b)
    buffer = x.numpy()
    for k in range(1, 4):
        version = x._version
        x.add_(y)
        x.mul_(2.0)
        assert x.numpy() is buffer and x._version == version + 2
    expected = a.copy()
    for _ in range(3):
        expected = (expected + b) * np.float32(2.0)
    np.testing.assert_array_equal(x.numpy(), expected)


def test_in_place_writes_into_overlapping_views_match_copies():
    a = np.arange(8, dtype=np.float32)
    x = flow.tensor(a.copy())
    for _ in range(2):
        expected = x.numpy().copy()
        expected[1:] = expected[1:] + expected[:-1]
        x[1:].add_(x[:-1])
        np.testing.assert_array_equal(x.numpy(), expected)


def test_in_place_checks_stay_on_repeated_calls():
    x = flow.tensor(_f32([1.0, 2.0]))
    row = flow.tensor(_f32([[1.0, 2.0]]))
    wide = flow.tensor(_f32([[1.0, 2.0], [3.0, 4.0]]))
    expanded = flow.tensor(_f32([[1.0, 2.0]])).expand(2, 2)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            x.add_(wide)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            expanded.add_(wide)
        row.add_(x)
    np.testing.assert_array_equal(row.numpy(), [[4.0, 8.0]])


def test_nll_without_weights_or_ignored_targets_matches_the_formula():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((5, 4)).astype(np.float32)
    t = np.array([0, 3, 1, 1, 2])
    logp = z - z.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    for _ in range(2):
        x = flow.tensor(z).requires_grad_()
        loss = flow.nn.functional.cross_entropy(x, flow.tensor(t))
        np.testing.assert_allclose(loss.item(), -logp[np.arange(5), t].mean(), rtol=1e-6)
        loss.backward()
        expected = np.exp(logp)
        expected[np.arange(5), t] -= 1
        np.testing.assert_allclose(x.grad.numpy(), expected / 5, rtol=1e-5, atol=1e-7)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        flow.nn.functional.cross_entropy(flow.tensor(z), flow.tensor(np.array([0, 4, 1, 1, 2])))
    ignored = flow.nn.functional.cross_entropy(flow.tensor(z), flow.tensor(np.array([0, -100, 1, 1, 2])))
    keep = [0, 2, 3, 4]
    np.testing.assert_allclose(ignored.item(), -logp[keep, t[keep]].mean(), rtol=1e-6)


# ---- gradients handed over without a copy -----------------------------------------------------------------
def test_leaf_grads_are_correct_and_independent_when_handed_over():
    w = flow.tensor(_f32([[1.0, 2.0], [3.0, 4.0]]))
    x = flow.tensor(_f32([[1.0, 0.0], [0.0, 1.0]])).requires_grad_()
    for k in range(1, 3):
        (x @ w).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), k * np.array([[3.0, 7.0], [3.0, 7.0]], np.float32))


def test_a_gradient_someone_else_holds_is_copied():
    x = flow.tensor(_f32([1.0, 2.0])).requires_grad_()
    kept = []
    y = x + 0.0
    y.register_hook(lambda g: kept.append(g))
    y.sum().backward()
    x.sum().backward()  # accumulates into x.grad in place
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(kept[0].numpy(), [1.0, 1.0])  # the hook's tensor was not written


def test_one_gradient_reaching_two_leaves_gives_two_buffers():
    a = flow.tensor(_f32([1.0, 2.0])).requires_grad_()
    b = flow.tensor(_f32([3.0, 4.0])).requires_grad_()
    for k in range(1, 3):
        (a + b).sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), [k, k])
        np.testing.assert_array_equal(b.grad.numpy(), [k, k])
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())


# ---- graphs: assigns written in place ------------------------------------------------------------------
class _Model(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = flow.nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


def _sgd_graph(model, returns_old_view):
    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            w = self.model.fc.weight
            old = w.reshape(6)  # a view of the weight before the update
            loss = self.model(x).sum()
            loss.backward()
            with flow.no_grad():
                for p in (w, self.model.fc.bias):
                    p.sub_(p.grad * 0.5)
            return (loss, old * 1.0) if returns_old_view else loss

    return Step()


@pytest.mark.parametrize("returns_old_view", [False, True])
def test_a_graph_updates_parameters_like_eager_steps(returns_old_view):
    flow.manual_seed(0)
    model = _Model()
    x = flow.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    w0, b0 = model.fc.weight.numpy().copy(), model.fc.bias.numpy().copy()
    graph = _sgd_graph(model, returns_old_view)
    w, b = w0.copy(), b0.copy()
    gw, gb = np.ones((2, 4), np.float32) @ x.numpy(), np.full(2, 4.0, np.float32)  # d sum(x @ w.T + b)
    for _ in range(3):
        out = graph(x)
        loss = out[0] if returns_old_view else out
        np.testing.assert_allclose(loss.item(), (x.numpy() @ w.T + b).sum(), rtol=1e-5)
        if returns_old_view:  # a view made before the write keeps the old value in a graph
            np.testing.assert_array_equal(out[1].numpy(), w.reshape(6))
        w, b = w - 0.5 * gw, b - 0.5 * gb
        np.testing.assert_allclose(model.fc.weight.numpy(), w, rtol=1e-6)
        np.testing.assert_allclose(model.fc.bias.numpy(), b, rtol=1e-6)
    source = graph.plan_source
    if returns_old_view:  # the weight's old value is read after its update: copied at the end
        assert "_copyto(p" in source
    else:
        assert "_copyto(" not in source
        assert any("in-place assigns: 2 of 2" in r for r in graph._last.reports)


def test_view_family_forgets_dead_views():
    x = flow.tensor(_f32([1.0, 2.0, 3.0])).requires_grad_()
    y = x * 1.0
    v = y[0:2]
    with pytest.raises(RuntimeError, match="shares memory with another live tensor"):
        y.mul_(2.0)
    del v
    for _ in range(40):  # many dead views: the family is pruned, they never count
        y[0:1] * 1.0
    y.mul_(2.0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


# ---- graphs: buffers borrowed from dead inputs ---------------------------------------------------------
def test_a_graph_writes_into_dead_kernel_results_but_never_into_its_inputs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 256)).astype(np.float32)  # 128 KiB: large enough to borrow
    w = rng.standard_normal((256, 256)).astype(np.float32)
    wt = flow.tensor(w)

    def f(x):
        viewed = x.reshape(256, 128).transpose(0, 1) * 2.0  # a view of the input: must not be written
        return flow.relu(x @ wt) * 3.0 + viewed.sum()

    graph = flow.nn.Graph.trace(f)
    x = flow.tensor(a)
    outs = []
    for _ in range(3):
        out = graph(x)
        np.testing.assert_array_equal(x.numpy(), a)  # the input was never written
        expected = np.maximum(a @ w, 0) * np.float32(3.0) + (a.reshape(256, 128).T * np.float32(2.0)).sum()
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-3)
        outs.append(out)
    assert not np.shares_memory(outs[1].numpy(), outs[2].numpy())
    assert any("written into the buffer of an input that dies there" in r for r in graph._last.reports)


def test_a_borrowed_buffer_is_checked_at_run_time_when_it_may_alias_an_input():
    a = np.arange(128 * 256, dtype=np.float32).reshape(128, 256)
    graph = flow.nn.Graph.trace(lambda x: x.reshape(-1) * 2.0)
    strided = flow.tensor(a).transpose(0, 1)  # (256, 128), not contiguous: reshape copies
    for _ in range(2):
        np.testing.assert_array_equal(graph(strided).numpy(), (a.T * np.float32(2.0)).reshape(-1))
    assert "is not x" in graph.plan_source  # the copy may be borrowed, guarded against aliasing the input
    b = a.reshape(256, 128).copy()
    plain = flow.tensor(b)  # same signature, contiguous: reshape now returns a view of the input
    for _ in range(2):
        np.testing.assert_array_equal(graph(plain).numpy(), b.reshape(-1) * np.float32(2.0))
        np.testing.assert_array_equal(plain.numpy(), a.reshape(256, 128))  # never written


# ---- functional fast path: argument shapes -------------------------------------------------------------
def test_calls_of_every_arity_bind_as_their_signatures_say():
    a = _f32([1.0, -2.0])
    x = flow.tensor(a)
    for _ in range(3):  # the first round binds the slow way, the later ones run from plans
        assert flow.zeros(2, 3, 4).shape == (2, 3, 4)  # three positional arguments
        assert flow.zeros(5).shape == (5,) and flow.zeros((2, 1)).shape == (2, 1)
        np.testing.assert_array_equal(flow.where(x > 0, x, flow.tensor(_f32([9.0, 9.0]))).numpy(), [1.0, 9.0])
        np.testing.assert_array_equal(flow.add(input=x, other=x).numpy(), a + a)  # keywords only
    with pytest.raises(TypeError, match=r"add\(\) received an invalid combination of arguments - got \(\)"):
        flow.add()


def test_the_positional_only_parameter_names_are_not_keywords():
    x = flow.tensor(_f32([1.0]))
    for _ in range(2):
        with pytest.raises(TypeError, match="relu\\(\\) missing required argument 'input'"):
            flow.relu(a0=x)
        with pytest.raises(TypeError, match="unexpected keyword argument 'a0'"):
            flow.relu(x, a0=x)
        with pytest.raises(TypeError, match=r"got \(Tensor, a1=Tensor\)"):
            flow.add(x, a1=x)


# ---- eager fast path: plain kernels --------------------------------------------------------------------
def test_plain_kernels_compute_what_their_kernels_compute():
    """Note [Plain kernels]: ``kernel.plain(*arrays)`` is ``kernel(ctx, *arrays)``."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    cases = {"broadcast_add": (a + b, a, b), "broadcast_sub": (a - b, a, b), "broadcast_mul": (a * b, a, b),
             "broadcast_less": (a < b, a, b), "negative": (-a, a), "matmul": (a @ b.T, a, b.T),
             "abs": (np.abs(a), a), "tanh": (np.tanh(a), a)}
    for op_type, (expected, *arrays) in cases.items():
        # the op's one kernel of NumPy dtypes (its bfloat16 kernel runs that kernel on float32 copies)
        (reg,) = [r for r in DISPATCHER.entry(op_type).kernels["cpu"] if not isinstance(r.fn, Float32Compute)]
        np.testing.assert_array_equal(reg.fn.plain(*arrays), expected)
        np.testing.assert_array_equal(reg.fn(None, *arrays), expected)
    assert not hasattr(DISPATCHER.entry("broadcast_div").kernels["cpu"][0].fn, "plain")  # it silences warnings


def test_the_fast_path_calls_a_kernels_plain_form_and_checks_its_dtype():
    name = f"fast_path_plain_{next(_ids)}"
    definition = register_user_op(name, inputs=["x"], outputs=["y"],
                                  infer_shape=lambda ctx: ctx.shape("x"), infer_dtype=lambda ctx: ctx.dtype("x"))
    calls = []

    def kernel(ctx, x):
        calls.append("kernel")
        return x + 1

    def plain(x):
        calls.append("plain")
        return (x + 1) if len(calls) < 4 else (x + 1).astype(np.float64)

    kernel.plain = plain
    reg = DISPATCHER.register_kernel(name, "cpu", kernel, predicate=dtype_in("x", *FLOATING_DTYPES))
    try:
        op = OpBuilder(name).input("x").output("y").build()
        x = flow.tensor(_f32([1.0, 2.0]))
        for _ in range(3):
            np.testing.assert_array_equal(dispatch(op, (x,))[0].numpy(), [2.0, 3.0])
        assert calls == ["kernel", "plain", "plain"]  # the first call chose the kernel on the general path
        with pytest.raises(RuntimeError, match="kernel produced output 'y_0' with shape \\(2,\\) and dtype float64"):
            dispatch(op, (x,))
    finally:
        reg.remove()
        definition.remove()


def test_overload_resolution_leaves_no_reference_cycle():
    """An overload that did not fit keeps its error without the traceback: the traceback's frames would hold the
    caller's tensors in a cycle until the garbage collector runs (with it off, a training step's activations)."""
    def caller(t):
        return flow.arange(0, 3, dtype=flow.int64, device=t.device)  # the first overload does not fit

    gc.collect()
    gc.disable()
    try:
        for _ in range(2):
            x = flow.ones(3)
            ref = weakref.ref(x)
            np.testing.assert_array_equal(caller(x).numpy(), [0, 1, 2])
            del x
            assert ref() is None
    finally:
        gc.enable()
