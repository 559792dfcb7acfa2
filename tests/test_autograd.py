"""Autograd core: Tensor API, grad mode, the AutogradInterpreter, the engine, hooks, in-place safety.

Expected gradients are hand-derived NumPy formulas written here.
"""

import gc
import threading
import weakref

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite.autograd.grad_function import OpExprGradFunction, register_op_grad
from oneflow_lite.dispatch import DISPATCHER, DispatchKey
from oneflow_lite.framework.op_builder import OpBuilder
from oneflow_lite.framework.op_registry import lookup, register_user_op
from oneflow_lite.interpreters import autograd as autograd_interp
from oneflow_lite.interpreters.op_interp_util import dispatch
from oneflow_lite.kernels.registration import cpu_kernel
from oneflow_lite.ops.common import same_dtype, same_shape

AG = 1 << DispatchKey.Autograd


def leaf(values, dtype=np.float64):
    return flow.tensor(np.asarray(values, dtype=dtype)).requires_grad_()


def const(values, dtype=np.float64):
    return flow.tensor(np.asarray(values, dtype=dtype))


# ---- test ops defined here (outside the package) -----------------------------------------------------
register_user_op("ag_test_no_grad_fn", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype)
register_user_op("ag_test_no_grad_op", inputs=["x"], outputs=["y"], infer_shape=same_shape, infer_dtype=same_dtype,
                 no_grad=True)
register_user_op("ag_test_fill", outputs=["out"], attrs={"value": ("double", 0.0)}, no_grad=True,
                 infer_shape=lambda c: (2,), infer_dtype=lambda c: flow.float64)
register_user_op("ag_test_two_out", inputs=["x"], outputs=["a", "b"], infer_shape=lambda c: (c.shape("x"),) * 2,
                 infer_dtype=lambda c: (c.dtype("x"),) * 2)


@cpu_kernel("ag_test_no_grad_fn")
def _double_cpu(ctx, x):
    return x * 2


@cpu_kernel("ag_test_no_grad_op")
def _triple_cpu(ctx, x):
    return x * 3


@cpu_kernel("ag_test_fill")
def _fill_cpu(ctx):
    return np.full((2,), ctx.attrs["value"])


@cpu_kernel("ag_test_two_out")
def _two_out_cpu(ctx, x):
    return x * 2, x * 3


_seen = {}


@register_op_grad("ag_test_two_out")
class _TwoOutGrad(OpExprGradFunction):
    def capture(self, state, inputs, outputs, attrs):
        _seen["grad_fn_at_capture"] = outputs[0].grad_fn

    def apply(self, state, out_grads):
        _seen["out_grads"] = [g.numpy().copy() for g in out_grads]
        return (flow.add(flow.mul(out_grads[0], 2.0), flow.mul(out_grads[1], 3.0)),)


def _run(op_type, x):
    outs = dispatch(OpBuilder(op_type).input("x").output("y").build(), (x,))
    return outs[0]


def _fill_(t, value):
    """An in-place write by a no_grad op without tensor inputs (like ``fill_``)."""
    from oneflow_lite.framework.attr import AttrMap
    op = OpBuilder("ag_test_fill").output("out").build()
    return dispatch(op, (), AttrMap({"value": value}), (t,))[0]


def _two_out(x):
    return dispatch(OpBuilder("ag_test_two_out").input("x").output("a").output("b").build(), (x,))


# ---- Tensor API ------------------------------------------------------------------------------------
class TestTensorAPI:
    def test_requires_grad_is_the_autograd_key_bit(self):
        x = const([1.0, 2.0])
        assert not x.requires_grad and not x.key_set & AG
        assert x.requires_grad_() is x
        assert x.requires_grad and x.key_set & AG
        x.requires_grad = False
        assert not x.requires_grad and not x.key_set & AG

    def test_creation_functions_take_requires_grad(self):
        for t in (flow.zeros(2, 3, requires_grad=True), flow.ones((2,), dtype=flow.float64, requires_grad=True),
                  flow.full((2,), 1.5, requires_grad=True), flow.arange(0.0, 2.0, 0.5, requires_grad=True),
                  flow.rand(2, requires_grad=True), flow.randn(2, requires_grad=True),
                  flow.tensor([1.0, 2.0], requires_grad=True)):
            assert t.requires_grad and t.is_leaf
        assert not flow.zeros(2).requires_grad and not flow.tensor([1.0]).requires_grad
        with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
            flow.arange(3, requires_grad=True)

    def test_tensor_of_a_tensor_is_a_detached_leaf(self):
        x = leaf([1.0, 2.0])
        y = flow.tensor(x * 2)
        assert y.is_leaf and not y.requires_grad
        np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])

    def test_requires_grad_needs_floating_dtype(self):
        with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
            flow.tensor([1, 2]).requires_grad_()
        with pytest.raises(TypeError, match="must be bool"):
            const([1.0]).requires_grad_(1)

    def test_requires_grad_settable_on_leaves_only(self):
        y = leaf([1.0, -2.0]) * 2
        with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
            y.requires_grad = False
        y.requires_grad_(True)  # already requires grad: a no-op
        assert y.requires_grad

    def test_is_leaf(self):
        x, c = leaf([1.0]), const([1.0])
        assert x.is_leaf and c.is_leaf
        assert not (x * 2).is_leaf
        assert (c * 2).is_leaf

    def test_grad_fn_name_next_functions_and_repr(self):
        x, c = leaf([1.0, -2.0]), const([3.0, 4.0])
        y = flow.relu(x)
        assert y.grad_fn.name() == "ReluBackward"
        assert "grad_fn=<ReluBackward0>" in repr(y)
        assert "requires_grad=True" in repr(x) and "requires_grad" not in repr(c)
        acc, nr = y.grad_fn.next_functions[0]
        assert acc.name() == "AccumulateGrad" and acc.variable is x and nr == 0
        z = y * c
        assert z.grad_fn.name() == "MulBackward"
        assert z.grad_fn.next_functions[0] == (y.grad_fn, 0)
        assert z.grad_fn.next_functions[1] == (None, 0)
        assert x.grad_fn is None and c.grad_fn is None

    def test_grad_setter_checks(self):
        x = leaf([1.0, 2.0])
        x.grad = const([5.0, 6.0])
        np.testing.assert_array_equal(x.grad.numpy(), [5.0, 6.0])
        with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
            x.grad = const([1.0, 2.0, 3.0])
        with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
            x.grad = const([1.0, 2.0], np.float32)
        with pytest.raises(RuntimeError, match="different device"):
            x.grad = flow.zeros((2,), dtype=flow.float64, device="meta")
        with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
            x.grad = [1.0, 2.0]
        np.testing.assert_array_equal(x.grad.numpy(), [5.0, 6.0])  # failed assignments changed nothing
        x.grad = None
        assert x.grad is None

    def test_non_leaf_grad_warns_unless_retained(self):
        y = leaf([1.0]) * 2
        with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed"):
            assert y.grad is None

    def test_detach_shares_data_and_version(self):
        x = leaf([1.0, 2.0])
        d = x.detach()
        assert not d.requires_grad and d.is_leaf
        assert np.shares_memory(d.numpy(), x.numpy())
        with flow.no_grad():
            d.mul_(2.0)
        assert x._version == 1 and d._version == 1
        np.testing.assert_array_equal(x.numpy(), [2.0, 4.0])

    def test_detach_in_place(self):
        x = leaf([1.0, 2.0])
        y = x * 2
        assert y.detach_() is y
        assert y.is_leaf and not y.requires_grad and y.grad_fn is None

    def test_retain_grad(self):
        x = leaf([1.0, -2.0, 3.0])
        y = x * 2
        y.retain_grad()
        assert y.retains_grad and not x.retains_grad
        (y * y).sum().backward()
        np.testing.assert_array_equal(y.grad.numpy(), 2 * np.array([2.0, -4.0, 6.0]))
        with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
            const([1.0]).retain_grad()
        x.retain_grad()  # a no-op on leaves

    def test_version_counter_counts_in_place_writes(self):
        x = const([1.0, 2.0])
        assert x._version == 0
        x.add_(1.0)
        x.mul_(2.0)
        assert x._version == 2
        y = x + 1
        assert y._version == 0


# ---- grad mode ---------------------------------------------------------------------------------------
class TestGradMode:
    def test_no_grad_context(self):
        x = leaf([1.0])
        with flow.no_grad():
            assert not flow.is_grad_enabled()
            assert flow.dispatch.excluded() & AG  # no_grad is the Autograd key excluded
            y = x * 2
        assert flow.is_grad_enabled() and not flow.dispatch.excluded() & AG
        assert not y.requires_grad and y.grad_fn is None

    def test_restored_after_exception(self):
        with pytest.raises(ValueError), flow.no_grad():
            raise ValueError("boom")
        assert flow.is_grad_enabled()

    def test_decorators(self):
        x = leaf([1.0])

        @flow.no_grad()
        def f(t):
            return t * 2

        @flow.no_grad
        def g(t):
            return t * 2

        assert not f(x).requires_grad and not g(x).requires_grad
        assert flow.is_grad_enabled()

        @flow.enable_grad()
        def h(t):
            return t * 2

        with flow.no_grad():
            assert h(x).requires_grad
            assert not flow.is_grad_enabled()

    def test_generator_decorator(self):
        @flow.no_grad()
        def gen():
            for _ in range(2):
                yield flow.is_grad_enabled()

        assert list(gen()) == [False, False]
        assert flow.is_grad_enabled()

    def test_enable_grad_inside_no_grad(self):
        x = leaf([1.0])
        with flow.no_grad():
            with flow.enable_grad():
                assert flow.is_grad_enabled()
                assert (x * 2).requires_grad
            assert not flow.is_grad_enabled()

    def test_set_grad_enabled(self):
        x = leaf([1.0])
        flow.set_grad_enabled(False)
        try:
            assert not flow.is_grad_enabled()
            assert not (x * 2).requires_grad
        finally:
            flow.set_grad_enabled(True)
        with flow.set_grad_enabled(False):
            assert not flow.is_grad_enabled()
        assert flow.is_grad_enabled()
        with pytest.raises(TypeError, match="must be bool"):
            flow.set_grad_enabled(0)

    def test_thread_local(self):
        seen = []
        with flow.no_grad():
            t = threading.Thread(target=lambda: seen.append(flow.is_grad_enabled()))
            t.start()
            t.join()
        assert seen == [True]


# ---- the interpreter ---------------------------------------------------------------------------------
class TestInterpreter:
    def test_registered_at_autograd_key(self):
        kind, reg = DISPATCHER.entry("relu").provenance[DispatchKey.Autograd]
        assert kind == "fallback" and reg.fn is autograd_interp.autograd_interpreter

    def test_tensors_without_grad_never_reach_it(self):
        calls = []

        def spy(op_expr, ks, inputs, attrs, outputs):
            calls.append(op_expr.op_type_name)
            return autograd_interp.autograd_interpreter(op_expr, ks, inputs, attrs, outputs)

        with pytest.warns(UserWarning, match="Overriding"):
            handle = DISPATCHER.register_fallback(DispatchKey.Autograd, spy)
        try:
            c = const([1.0, -1.0])
            flow.relu(c * 2)
            assert calls == []
            flow.relu(leaf([1.0]))
            assert calls == ["relu"]
        finally:
            handle.remove()

    def test_integer_and_bool_outputs_never_require_grad(self):
        x = leaf([1.0, -1.0])
        assert not (x > 0).requires_grad
        assert not x.long().requires_grad
        assert x.float().requires_grad

    def test_no_grad_op_never_records(self):
        assert lookup("ag_test_no_grad_op").no_grad
        y = _run("ag_test_no_grad_op", leaf([1.0]))
        assert not y.requires_grad and y.grad_fn is None
        np.testing.assert_array_equal(y.numpy(), [3.0])

    def test_op_without_grad_function_raises_at_backward(self):
        x = leaf([1.0, 2.0])
        y = _run("ag_test_no_grad_fn", x)  # forward works, the node is recorded
        assert y.requires_grad and y.grad_fn.name() == "AgTestNoGradFnBackward"
        with pytest.raises(RuntimeError, match="the derivative for op 'ag_test_no_grad_fn' is not implemented"):
            y.sum().backward()

    def test_node_is_added_before_capture(self):
        x = leaf([1.0])
        a, b = _two_out(x)
        assert _seen["grad_fn_at_capture"] is a.grad_fn is b.grad_fn
        assert (a.grad_fn.next_functions[0][0].variable is x)

    def test_forward_of_recorded_op_is_not_recorded_twice(self):
        x = leaf([2.0])
        y = x * 3
        assert y.grad_fn.next_functions[0][0].variable is x  # the kernel ran below Autograd


# ---- the engine --------------------------------------------------------------------------------------
class TestEngine:
    def test_mlp_like_chain(self):
        x = leaf([[1.0, -2.0], [3.0, 0.5]])
        w = leaf([[0.5], [-1.0]])
        h = flow.relu(x @ w)
        loss = (h * h).sum()
        loss.backward()
        xv, wv = x.numpy(), w.numpy()
        pre = xv @ wv
        dh = 2 * np.maximum(pre, 0) * (pre > 0)
        np.testing.assert_allclose(x.grad.numpy(), dh @ wv.T, rtol=0, atol=1e-15)
        np.testing.assert_allclose(w.grad.numpy(), xv.T @ dh, rtol=0, atol=1e-15)

    def test_deep_chain_no_recursion_and_freed(self):
        x = leaf([1.0, 2.0])
        y = x
        for _ in range(100_000):
            y = y + 1.0
        first = weakref.ref(y.grad_fn)
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
        del y
        gc.collect()
        assert first() is None

    def test_graph_is_freed_by_reference_counting(self):
        x = leaf([1.0])
        y = flow.exp(x * 2)
        refs = [weakref.ref(y.grad_fn), weakref.ref(y.grad_fn.next_functions[0][0])]
        del y
        assert all(r() is None for r in refs)  # no reference cycles: freed without gc

    def test_partial_grads_summed_out_of_place(self):
        x = leaf([1.0, 2.0])
        a, b = x * 2, x * 3
        grads = {}
        a.register_hook(lambda g: grads.__setitem__("a", (g, g.numpy().copy())))
        b.register_hook(lambda g: grads.__setitem__("b", (g, g.numpy().copy())))
        (a + b + x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])
        for g, seen in grads.values():  # the grads handed to the branches were not modified afterwards
            np.testing.assert_array_equal(g.numpy(), seen)

    def test_leaf_grad_copied_then_accumulated_in_place(self):
        x = leaf([1.0, 2.0])
        g = const([1.0, 1.0])
        (x * 1).backward(g)
        first = x.grad
        assert first is not g and not np.shares_memory(first.numpy(), g.numpy())
        g.mul_(5.0)
        np.testing.assert_array_equal(first.numpy(), [1.0, 1.0])
        (x * 2).sum().backward()
        assert x.grad is first  # accumulated in place
        np.testing.assert_array_equal(first.numpy(), [3.0, 3.0])

    def test_missing_out_grad_is_zeros(self):
        x = leaf([1.0, 2.0])
        a, _ = _two_out(x)
        a.sum().backward()  # the second output's grad is missing
        np.testing.assert_array_equal(_seen["out_grads"][1], [0.0, 0.0])
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])

    def test_retain_graph(self):
        x = leaf([1.0, 2.0])
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])
        with pytest.raises(RuntimeError, match=r"Trying to backward through the graph a second time \(or directly "
                                               r"access saved tensors after they have already been freed\)"):
            y.backward()

    def test_create_graph_double_backward(self):
        x = leaf([1.0, 2.0, -3.0])
        y = (x * x * x).sum()
        (g,) = flow.autograd.grad(y, x, create_graph=True)
        assert g.requires_grad
        np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
        (gg,) = flow.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(gg.numpy(), 6 * x.numpy())
        assert not gg.requires_grad

    def test_backward_create_graph_leaf_grad_is_differentiable(self):
        x = leaf([2.0])
        (x * x * x).sum().backward(create_graph=True)
        g = x.grad
        assert g.requires_grad
        (gg,) = flow.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(gg.numpy(), [12.0])

    def test_implicit_grad_only_for_scalars(self):
        x = leaf([1.0, 2.0])
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            (x * 2).backward()
        one = leaf([3.0])
        (one * 2).backward()  # one element: fine
        np.testing.assert_array_equal(one.grad.numpy(), [2.0])

    def test_given_grad_checked(self):
        x = leaf([1.0, 2.0])
        y = x * 2
        with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_tensors\[0\] has a shape of"):
            y.backward(const([1.0, 2.0, 3.0]))
        with pytest.raises(RuntimeError, match="a gradient must be a floating point tensor"):
            y.backward(flow.tensor([1, 1]))
        assert x.grad is None
        y.backward(const([1.0, 0.5], np.float32))  # a floating grad of another dtype is cast
        assert x.grad.dtype is flow.float64
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 1.0])

    def test_output_must_require_grad(self):
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a "
                                               "grad_fn"):
            const([1.0]).sum().backward()

    def test_backward_inside_no_grad(self):
        x = leaf([1.0, 2.0])
        y = (x * x).sum()
        with flow.no_grad():
            y.backward(create_graph=False)
            assert not flow.is_grad_enabled()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])

    def test_backward_on_leaf(self):
        x = leaf([1.0, 2.0])
        x.backward(const([3.0, 4.0]))
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])

    def test_autograd_backward_function(self):
        x = leaf([1.0, 2.0])
        a, b = x * 2, x * 3
        flow.autograd.backward([a, b], [const([1.0, 1.0]), const([1.0, 0.0])])
        np.testing.assert_array_equal(x.grad.numpy(), [5.0, 2.0])

    def test_backward_inputs(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        (x * w).sum().backward(inputs=[w])
        assert x.grad is None
        np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])

    def test_grad_prunes_branches_not_reaching_inputs(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        z = x * _run("ag_test_no_grad_fn", w)  # w's branch has no grad function
        (gx,) = flow.autograd.grad(z.sum(), x, retain_graph=True)
        np.testing.assert_array_equal(gx.numpy(), [6.0, 8.0])
        assert x.grad is None and w.grad is None  # grad() leaves .grad alone
        with pytest.raises(RuntimeError, match="not implemented"):
            z.sum().backward()

    def test_grad_unused_inputs(self):
        x, w = leaf([1.0]), leaf([2.0])
        y = (x * 3).sum()
        with pytest.raises(RuntimeError, match="One of the differentiated Tensors appears to not have been used in "
                                               "the graph. Set allow_unused=True if this is the desired behavior."):
            flow.autograd.grad(y, [x, w], retain_graph=True)
        gx, gw = flow.autograd.grad(y, [x, w], allow_unused=True)
        np.testing.assert_array_equal(gx.numpy(), [3.0])
        assert gw is None
        with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
            flow.autograd.grad((x * 2).sum(), const([1.0]))

    def test_grad_of_intermediate(self):
        x = leaf([1.0, 2.0])
        h = x * 3
        y = (h * h).sum()
        (gh,) = flow.autograd.grad(y, h)
        np.testing.assert_array_equal(gh.numpy(), 2 * h.numpy())

    def test_grad_outputs(self):
        x = leaf([1.0, 2.0])
        (g,) = flow.autograd.grad(x * 4, x, grad_outputs=const([1.0, -1.0]))
        np.testing.assert_array_equal(g.numpy(), [4.0, -4.0])

    def test_grad_takes_pytorchs_full_signature(self):
        """WGAN-GP code passes only_inputs=True; materialize_grads gives zeros for unused inputs;
        is_grads_batched runs one backward pass per row of the grad_outputs (the rows of a Jacobian)."""
        x, w = leaf([1.0, 2.0]), leaf([5.0])
        (g,) = flow.autograd.grad(outputs=(x ** 2).sum(), inputs=x, grad_outputs=flow.ones(()), create_graph=True,
                                  retain_graph=True, only_inputs=True)
        np.testing.assert_array_equal(g.numpy(), [2.0, 4.0])
        with pytest.warns(UserWarning, match="only_inputs argument is deprecated and is ignored now"):
            flow.autograd.grad((x * 3).sum(), x, only_inputs=False)
        gx, gw = flow.autograd.grad((x * 3).sum(), [x, w], materialize_grads=True)
        np.testing.assert_array_equal(gx.numpy(), [3.0, 3.0])
        np.testing.assert_array_equal(gw.numpy(), [0.0])
        with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when "
                                             "materialize_grads=True"):
            flow.autograd.grad((x * 3).sum(), [x, w], materialize_grads=True, allow_unused=False)
        y = x ** 3  # Jacobian diag(3 x^2): the batch of the identity's rows gives its rows
        (jac,) = flow.autograd.grad(y, x, grad_outputs=flow.eye(2), is_grads_batched=True)
        np.testing.assert_array_equal(jac.numpy(), [[3.0, 0.0], [0.0, 12.0]])
        with pytest.raises(RuntimeError, match="is_grads_batched=True needs grad_outputs"):
            flow.autograd.grad(x ** 3, x, is_grads_batched=True)

    def test_meta_device(self):
        x = flow.zeros((3, 4), dtype=flow.float32, device="meta").requires_grad_()
        (flow.relu(x) * 2).sum().backward()
        assert x.grad.device == flow.device("meta") and tuple(x.grad.shape) == (3, 4)


# ---- hooks -------------------------------------------------------------------------------------------
class TestHooks:
    def test_leaf_hook_replaces_grad_and_removes(self):
        x = leaf([1.0, 2.0])
        seen = []
        h = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
        (x * 2).sum().backward()
        np.testing.assert_array_equal(seen[0], [2.0, 2.0])
        np.testing.assert_array_equal(x.grad.numpy(), [20.0, 20.0])
        h.remove()
        x.grad = None
        (x * 2).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])

    def test_non_leaf_hook_changes_downstream(self):
        x = leaf([1.0, 2.0])
        y = x * 2
        y.register_hook(lambda g: g * 0.5)
        (y * 3).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])

    def test_hook_errors(self):
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            const([1.0]).register_hook(lambda g: g)
        x = leaf([1.0, 2.0])
        x.register_hook(lambda g: const([1.0]))
        with pytest.raises(RuntimeError, match="has changed the size of value"):
            (x * 2).sum().backward()

    def test_post_accumulate_grad_hook(self):
        x = leaf([1.0])
        seen = []
        x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
        (x * 2).sum().backward()
        assert seen and seen[0][0] == 2.0
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf"):
            (x * 2).register_post_accumulate_grad_hook(lambda t: None)

    def test_node_hooks(self):
        x = leaf([1.0, 2.0])
        y = x * 3
        seen = {}
        y.grad_fn.register_prehook(lambda gouts: seen.__setitem__("pre", gouts[0].numpy().copy()))
        y.grad_fn.register_hook(lambda gins, gouts: (gins[0] * 2,))
        y.sum().backward()
        np.testing.assert_array_equal(seen["pre"], [1.0, 1.0])
        np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])


# ---- in-place ----------------------------------------------------------------------------------------
class TestInPlace:
    @pytest.mark.parametrize("op", [lambda t: t.relu_(), lambda t: t.add_(1.0), lambda t: t.mul_(2.0),
                                    lambda t: t.sub_(const([1.0, 1.0])), lambda t: t.div_(2.0)])
    def test_leaf_requiring_grad(self, op):
        x = leaf([1.0, -2.0])
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                               "operation."):
            op(x)
        np.testing.assert_array_equal(x.numpy(), [1.0, -2.0])
        assert x._version == 0
        with flow.no_grad():
            op(x)  # allowed when not recording (e.g. an optimizer step)

    def test_modified_saved_tensor_detected(self):
        x = leaf([1.0, 2.0])
        y = flow.exp(x)  # saves its output
        z = y * 2
        y.add_(1.0)
        assert y._version == 1
        with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been "
                                               r"modified by an inplace operation: \[oneflow_lite.DoubleTensor \[2\]\], "
                                               r"which is output 0 of ExpBackward, is at version 1; expected "
                                               r"version 0 instead.*op 'exp'"):
            z.sum().backward()

    def test_modified_saved_input_detected(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
        h = x * 1
        y = h * w  # saves h for w's grad
        with flow.no_grad():
            h.mul_(2.0)
        with pytest.raises(RuntimeError, match=r"which is output 0 of ScalarMulBackward, is at version 1; expected "
                                               r"version 0 instead.*saved for the backward of MulBackward"):
            y.sum().backward()

    def test_in_place_on_non_leaf_is_recorded(self):
        x, w = leaf([1.0, 2.0]), leaf([3.0, -4.0])
        a = x * 1
        a.mul_(w)  # needs a's value before the write for w's grad
        assert a.grad_fn.name() == "MulBackward" and a._version == 1
        a.relu_()
        a.sum().backward()
        mask = (x.numpy() * w.numpy()) > 0
        np.testing.assert_array_equal(x.grad.numpy(), w.numpy() * mask)
        np.testing.assert_array_equal(w.grad.numpy(), x.numpy() * mask)

    def test_in_place_makes_output_require_grad(self):
        x = leaf([1.0, 2.0])
        z = const([0.0, 0.0])
        z.add_(x * 3)
        assert z.requires_grad and z.grad_fn.name() == "AddBackward"
        z.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])

    def test_no_grad_op_writing_in_place_cuts_history(self):
        x = leaf([1.0, 2.0])
        y = x * 2
        assert _fill_(y, 7.0) is y
        assert y._version == 1 and y.requires_grad and y.grad_fn.name() == "AgTestFillBackward"
        (y * x).sum().backward()  # y no longer depends on x: only the direct path counts
        np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0])
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            _fill_(x, 1.0)  # the written tensor's key set takes part in dispatch
        with flow.no_grad():
            _fill_(x, 1.0)
        np.testing.assert_array_equal(x.numpy(), [1.0, 1.0])

    def test_views_share_version_counter(self):
        t = const(np.arange(6.0))
        v = t.reshape((2, 3))
        s = v[:, 1:]
        s.add_(1.0)
        assert t._version == v._version == s._version == 1
        np.testing.assert_array_equal(t.numpy(), [0, 2, 3, 3, 5, 6])

    def test_in_place_on_view_refused_when_recording(self):
        x = leaf(np.arange(6.0))
        a = x * 1
        v = a.reshape((2, 3))
        with pytest.raises(RuntimeError, match="autograd cannot record an in-place operation on a tensor that shares "
                                               "memory with another live tensor"):
            v.mul_(2.0)
        with pytest.raises(RuntimeError, match="shares memory"):
            a.mul_(2.0)
        del v
        a.mul_(2.0)  # the view is gone
        a.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(6, 2.0))


# ---- autograd.functional (Note [Functional autograd]) ------------------------------------------------
class TestFunctionalAutograd:
    def test_jacobian_of_one_and_of_several_inputs_and_outputs(self):
        from oneflow_lite.autograd.functional import jacobian
        x = np.array([1.0, 2.0], np.float32)
        y = np.array([0.5, -1.0, 2.0], np.float32)
        jac = jacobian(lambda v: v.sin() * v.sum(), flow.tensor(x))  # d/dx_j sin(x_i) S = cos(x_i) S [i=j] + sin(x_i)
        expect = np.diag(np.cos(x) * x.sum()) + np.sin(x)[:, None]
        np.testing.assert_allclose(jac.numpy(), expect, rtol=1e-6)
        assert not jac.requires_grad
        (dx, dy), (ex, ey) = jacobian(lambda a, b: (a ** 2 * b.sum(), a.exp() * 3), (flow.tensor(x), flow.tensor(y)))
        np.testing.assert_allclose(dx.numpy(), np.diag(2 * x * y.sum()), rtol=1e-6)
        np.testing.assert_allclose(dy.numpy(), np.tile((x ** 2)[:, None], (1, 3)), rtol=1e-6)
        np.testing.assert_allclose(ex.numpy(), np.diag(3 * np.exp(x)), rtol=1e-6)
        np.testing.assert_array_equal(ey.numpy(), np.zeros((2, 3)))  # independent: zeros
        m = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
        assert tuple(jacobian(lambda a: a @ a, m).shape) == (2, 2, 2, 2)
        with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1. "
                                               "This is not allowed in strict mode."):
            jacobian(lambda a, b: a * 2, (flow.tensor(x), flow.tensor(y)), strict=True)

    def test_hessian_and_hessian_vector_products(self):
        from oneflow_lite.autograd.functional import hessian, hvp, vhp
        x = np.array([1.0, 2.0, 3.0], np.float32)

        def f(v):  # sum v^3 + v0 v1 v2
            return (v ** 3).sum() + v[0] * v[1] * v[2]
        expect = np.diag(6 * x) + np.array([[0, x[2], x[1]], [x[2], 0, x[0]], [x[1], x[0], 0]])
        np.testing.assert_allclose(hessian(f, flow.tensor(x)).numpy(), expect, rtol=1e-6)
        v = np.array([1.0, -1.0, 0.5], np.float32)
        for product in (hvp, vhp):
            value, hv = product(f, flow.tensor(x), flow.tensor(v))
            assert value.item() == pytest.approx((x ** 3).sum() + x.prod())
            np.testing.assert_allclose(hv.numpy(), expect @ v, rtol=1e-6)
        (haa, hab), (hba, hbb) = hessian(lambda a, b: (a ** 2 * b).sum(), (flow.tensor([1.0, 2.0]),
                                                                           flow.tensor([3.0, 4.0])))
        np.testing.assert_allclose(haa.numpy(), np.diag([6.0, 8.0]))
        np.testing.assert_allclose(hab.numpy(), np.diag([2.0, 4.0]))
        np.testing.assert_array_equal(hbb.numpy(), np.zeros((2, 2)))
        with pytest.raises(RuntimeError, match="should return a single Tensor with a single element"):
            hessian(lambda a: a * 2, flow.tensor([1.0, 2.0]))

    def test_vjp_jvp_and_create_graph(self):
        from oneflow_lite.autograd import functional as AF
        x = flow.tensor([1.0, 2.0])
        out, g = AF.vjp(lambda v: v ** 2, x, flow.tensor([1.0, -1.0]))
        np.testing.assert_array_equal(out.numpy(), [1.0, 4.0])
        np.testing.assert_array_equal(g.numpy(), [2.0, -4.0])
        _, g = AF.vjp(lambda v: (v ** 2).sum(), x)  # a single-element output needs no v
        np.testing.assert_array_equal(g.numpy(), [2.0, 4.0])
        with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided function returns"):
            AF.vjp(lambda v: v ** 2, x)
        _, jv = AF.jvp(lambda a, b: a * b.sum(), (x, flow.tensor([3.0, 4.0])), (flow.ones(2), flow.ones(2)))
        np.testing.assert_array_equal(jv.numpy(), [7.0 + 1.0 * 2, 7.0 + 2.0 * 2])  # J_a 1 + J_b 1 = S + 2 a
        w = flow.tensor([1.0, 2.0], requires_grad=True)
        jac = AF.jacobian(lambda v: v ** 2 * w, x, create_graph=True)  # diag(2 x w): d(sum)/dw = 2 x
        assert jac.requires_grad
        jac.sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])
        with flow.mock_torch.enable():
            import torch.autograd.functional as torch_functional
        assert torch_functional.jacobian is AF.jacobian


# ---- saved tensor hooks (Note [Saved tensor hooks]) --------------------------------------------------------
def test_saved_tensors_hooks_pack_and_unpack_what_backward_uses():
    from oneflow_lite.autograd.graph import save_on_cpu, saved_tensors_hooks
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return ("box", t.detach().clone())

    with saved_tensors_hooks(pack, lambda box: box[1]):
        y = (x * x).sum()
    assert packed == [(3,), (3,)]  # both factors of the product
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])
    x.grad = None
    with saved_tensors_hooks(lambda t: t, lambda t: t * 2):  # backward really uses the unpacked values
        (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0, 12.0])
    x.grad = None
    with save_on_cpu():
        (x ** 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 12.0, 27.0])
    x.grad, packed[:] = None, []
    (x * x).sum().backward()  # outside the block: no hooks
    assert packed == []
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        h = x * 1
        z = (h * h).sum()
    h.add_(1)  # the version check still applies
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
