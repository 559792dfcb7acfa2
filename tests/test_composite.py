"""Composite functions (Note [Composite ops]): no op of their own; autograd and graph capture see their parts."""

import numpy as np

import oneflow_lite as flow
from oneflow_lite.dispatch.dispatcher import DISPATCHER
from oneflow_lite.framework.calls import F
from oneflow_lite.functors.registry import composite, composite_location, get_functor


def test_a_composite_has_no_entry_and_dump_table_says_where_it_is_defined():
    assert DISPATCHER.find_entry("relu6") is None
    text = flow.dispatch.dump_table("relu6")
    assert text.startswith("relu6: composite (CompositeImplicitAutograd)\n  => Relu6 defined at "
                           "oneflow_lite/functors/activation.py:")
    assert flow.dispatch.dump("relu6") == text


def test_autograd_and_graph_capture_see_the_ops_a_composite_calls():
    x = flow.tensor([-1.0, 3.0, 7.0], requires_grad=True)
    y = flow.nn.functional.relu6(x)
    np.testing.assert_array_equal(y.numpy(), [0.0, 3.0, 6.0])
    assert y.grad_fn.name() == "HardtanhBackward"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])
    g = flow.nn.Graph.trace(lambda t: flow.nn.functional.relu6(t))
    np.testing.assert_array_equal(g(flow.tensor([-1.0, 7.0])).numpy(), [0.0, 6.0])
    ops = [op.user_conf.op_type_name for op in g.captured_job.net.op if op.HasField("user_conf")]
    assert ops == ["hardtanh"]


def test_a_composite_defined_outside_the_package_runs_through_f():
    @composite("TestSoftsign")
    def softsign(x):
        return F.div(x, F.add(F.abs(x), 1))

    assert composite_location("TestSoftsign").startswith("tests/test_composite.py:")
    x = flow.tensor([-3.0, 1.0], requires_grad=True)
    y = get_functor("TestSoftsign")(x)
    np.testing.assert_allclose(y.numpy(), [-0.75, 0.5])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 / 16, 1 / 4])
