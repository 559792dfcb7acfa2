"""Every nn layer exported to ONNX: each class in ``flow.nn`` is built from a table (constructor, example inputs),
exported in eval mode, checked with onnx.checker, run with ONNX Runtime and compared with oneflow_lite (1e-5); the
layers that cannot be exported are listed with the reason and must raise an error naming the op (or value) that
stops them. Skipped without onnx."""

import numpy as np
import pytest

import oneflow_lite as flow
from oneflow_lite import nn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

F = nn.functional
r = flow.randn


def seq():
    return r(2, 4, 8)


def img():
    return r(2, 4, 6, 6)


def vol():
    return r(2, 4, 4, 4, 4)


def pair():
    return r(4, 5), r(4, 5)


def signs():
    return flow.tensor(np.sign(np.random.default_rng(0).standard_normal((4, 5))).astype(np.float32))


def classes():
    return flow.tensor([1, 0, 4, 2])


def pooled(nd):
    def inputs():
        x = r(2, 3, *([6] * nd))
        return getattr(F, f"max_pool{nd}d")(x, 2, return_indices=True)
    return inputs


def dry_run(layer, inputs):
    """A lazy layer after the first call that sizes it (it is then its regular class, as in PyTorch)."""
    layer(inputs())
    return layer


def encoder_layer():
    return nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)


def decoder_layer():
    return nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)


# class name -> (constructor, example inputs)
LAYERS = {
    "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), seq),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d(4), img),
    "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d(2), vol),
    "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(3), seq),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(4), img),
    "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(3), vol),
    "AlphaDropout": (lambda: nn.AlphaDropout(0.2), seq),
    "AvgPool1d": (lambda: nn.AvgPool1d(2), seq),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, 2, 1), img),
    "AvgPool3d": (lambda: nn.AvgPool3d(2), vol),
    "BCELoss": (lambda: nn.BCELoss(), lambda: (flow.rand(4, 5) * 0.8 + 0.1, flow.rand(4, 5))),
    "BCEWithLogitsLoss": (lambda: nn.BCEWithLogitsLoss(pos_weight=flow.rand(5)),
                          lambda: (r(4, 5), flow.rand(4, 5))),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), seq),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(4), img),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(4), vol),
    "Bilinear": (lambda: nn.Bilinear(4, 5, 3), lambda: (r(3, 4), r(3, 5))),
    "CELU": (lambda: nn.CELU(0.7), seq),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), img),
    "CircularPad1d": (lambda: nn.CircularPad1d((1, 2)), seq),
    "CircularPad2d": (lambda: nn.CircularPad2d(1), img),
    "CircularPad3d": (lambda: nn.CircularPad3d(1), vol),
    "ConstantPad1d": (lambda: nn.ConstantPad1d((1, 2), 0.5), seq),
    "ConstantPad2d": (lambda: nn.ConstantPad2d(1, -1.0), img),
    "ConstantPad3d": (lambda: nn.ConstantPad3d(1, 2.0), vol),
    "Conv1d": (lambda: nn.Conv1d(4, 3, 3), seq),
    "Conv2d": (lambda: nn.Conv2d(4, 3, 3, padding="same"), img),
    "Conv3d": (lambda: nn.Conv3d(4, 3, 3), vol),
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(4, 3, 3, stride=2), seq),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(4, 3, 3, stride=2), img),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(4, 3, 3, stride=2), vol),
    "CosineEmbeddingLoss": (lambda: nn.CosineEmbeddingLoss(0.1), lambda: (*pair(), flow.tensor([1., -1., 1., -1.]))),
    "CosineSimilarity": (lambda: nn.CosineSimilarity(1), pair),
    "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(label_smoothing=0.1), lambda: (r(4, 5), classes())),
    "DataParallel": (lambda: nn.DataParallel(nn.Linear(8, 3)), seq),
    "Dropout": (lambda: nn.Dropout(0.3), seq),
    "Dropout1d": (lambda: nn.Dropout1d(0.3), seq),
    "Dropout2d": (lambda: nn.Dropout2d(0.3), img),
    "Dropout3d": (lambda: nn.Dropout3d(0.3), vol),
    "ELU": (lambda: nn.ELU(), seq),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(10, 3), lambda: flow.tensor([[1, 2, 2], [9, 0, 4]])),
    "Embedding": (lambda: nn.Embedding(10, 3, padding_idx=0), lambda: flow.tensor([[1, 2], [9, 0]])),
    "FeatureAlphaDropout": (lambda: nn.FeatureAlphaDropout(0.2), img),
    "Flatten": (lambda: nn.Flatten(), img),
    "Fold": (lambda: nn.Fold((4, 5), 2), lambda: r(2, 12, 12)),
    "GELU": (lambda: nn.GELU("tanh"), seq),
    "GLU": (lambda: nn.GLU(), seq),
    "GRU": (lambda: nn.GRU(8, 5, num_layers=2), seq),
    "GRUCell": (lambda: nn.GRUCell(8, 5), lambda: r(3, 8)),
    "GaussianNLLLoss": (lambda: nn.GaussianNLLLoss(), lambda: (*pair(), flow.rand(4, 5) + 0.1)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), img),
    "Hardshrink": (lambda: nn.Hardshrink(), seq),
    "Hardsigmoid": (lambda: nn.Hardsigmoid(), seq),
    "Hardswish": (lambda: nn.Hardswish(), seq),
    "Hardtanh": (lambda: nn.Hardtanh(), seq),
    "HingeEmbeddingLoss": (lambda: nn.HingeEmbeddingLoss(), lambda: (r(4, 5), signs())),
    "HuberLoss": (lambda: nn.HuberLoss(delta=0.5), pair),
    "Identity": (lambda: nn.Identity(), seq),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(4, affine=True), seq),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(4), img),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(4, track_running_stats=True), vol),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"), lambda: (r(4, 5).log_softmax(1), flow.rand(4, 5))),
    "L1Loss": (lambda: nn.L1Loss(), pair),
    "LPPool1d": (lambda: nn.LPPool1d(2, 2), seq),
    "LPPool2d": (lambda: nn.LPPool2d(2, 2), img),
    "LPPool3d": (lambda: nn.LPPool3d(2, 2), vol),
    "LSTM": (lambda: nn.LSTM(8, 5, batch_first=True), seq),
    "LSTMCell": (lambda: nn.LSTMCell(8, 5), lambda: r(3, 8)),
    "LayerNorm": (lambda: nn.LayerNorm(8), seq),
    "LeakyReLU": (lambda: nn.LeakyReLU(), seq),
    "Linear": (lambda: nn.Linear(8, 3), seq),
    "LinearCrossEntropyLoss": (lambda: nn.LinearCrossEntropyLoss(8, 5), lambda: (r(4, 8), classes())),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(3), img),
    "LogSigmoid": (lambda: nn.LogSigmoid(), seq),
    "LogSoftmax": (lambda: nn.LogSoftmax(1), seq),
    "MSELoss": (lambda: nn.MSELoss(), pair),
    "MarginRankingLoss": (lambda: nn.MarginRankingLoss(0.2), lambda: (r(4), r(4), flow.tensor([1., -1., 1., 1.]))),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), seq),
    "MaxPool2d": (lambda: nn.MaxPool2d(3, 2, 1, return_indices=True), img),
    "MaxPool3d": (lambda: nn.MaxPool3d(2), vol),
    "MaxUnpool1d": (lambda: nn.MaxUnpool1d(2), pooled(1)),
    "MaxUnpool2d": (lambda: nn.MaxUnpool2d(2), pooled(2)),
    "MaxUnpool3d": (lambda: nn.MaxUnpool3d(2), pooled(3)),
    "Mish": (lambda: nn.Mish(), seq),
    "MultiLabelMarginLoss": (lambda: nn.MultiLabelMarginLoss(),
                             lambda: (r(2, 4), flow.tensor([[3, 0, -1, 1], [1, 2, 3, -1]]))),
    "MultiLabelSoftMarginLoss": (lambda: nn.MultiLabelSoftMarginLoss(),
                                 lambda: (r(4, 5), (flow.rand(4, 5) > 0.5).float())),
    "MultiMarginLoss": (lambda: nn.MultiMarginLoss(), lambda: (r(4, 5), classes())),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                           lambda: (r(2, 4, 8), r(2, 4, 8), r(2, 4, 8))),
    "NLLLoss": (lambda: nn.NLLLoss(weight=flow.rand(5) + 0.1), lambda: (r(4, 5).log_softmax(1), classes())),
    "NLLLoss2d": (lambda: nn.NLLLoss2d(), lambda: (r(2, 3, 4, 4).log_softmax(1), flow.randint(0, 3, (2, 4, 4)))),
    "PReLU": (lambda: nn.PReLU(4), seq),
    "PairwiseDistance": (lambda: nn.PairwiseDistance(), pair),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), img),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), img),
    "PoissonNLLLoss": (lambda: nn.PoissonNLLLoss(), pair),
    "RMSNorm": (lambda: nn.RMSNorm(8), seq),
    "RNN": (lambda: nn.RNN(8, 5, nonlinearity="relu", bidirectional=True), seq),
    "RNNCell": (lambda: nn.RNNCell(8, 5), lambda: r(3, 8)),
    "RReLU": (lambda: nn.RReLU(), seq),
    "ReLU": (lambda: nn.ReLU(), seq),
    "ReLU6": (lambda: nn.ReLU6(), seq),
    "ReflectionPad1d": (lambda: nn.ReflectionPad1d(2), seq),
    "ReflectionPad2d": (lambda: nn.ReflectionPad2d((1, 2, 0, 1)), img),
    "ReflectionPad3d": (lambda: nn.ReflectionPad3d(1), vol),
    "ReplicationPad1d": (lambda: nn.ReplicationPad1d(2), seq),
    "ReplicationPad2d": (lambda: nn.ReplicationPad2d((1, 2, 0, 1)), img),
    "ReplicationPad3d": (lambda: nn.ReplicationPad3d(1), vol),
    "SELU": (lambda: nn.SELU(), seq),
    "Sequential": (lambda: nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 2)), seq),
    "SiLU": (lambda: nn.SiLU(), seq),
    "Sigmoid": (lambda: nn.Sigmoid(), seq),
    "SmoothL1Loss": (lambda: nn.SmoothL1Loss(beta=0.5), pair),
    "SoftMarginLoss": (lambda: nn.SoftMarginLoss(), lambda: (r(4, 5), signs())),
    "Softmax": (lambda: nn.Softmax(-1), seq),
    "Softmax2d": (lambda: nn.Softmax2d(), img),
    "Softmin": (lambda: nn.Softmin(1), seq),
    "Softplus": (lambda: nn.Softplus(), seq),
    "Softshrink": (lambda: nn.Softshrink(), seq),
    "Softsign": (lambda: nn.Softsign(), seq),
    "Tanh": (lambda: nn.Tanh(), seq),
    "Tanhshrink": (lambda: nn.Tanhshrink(), seq),
    "Threshold": (lambda: nn.Threshold(0.1, 20.0), seq),
    "Transformer": (lambda: nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True),
                    lambda: (r(2, 5, 8), r(2, 3, 8))),
    "TransformerDecoder": (lambda: nn.TransformerDecoder(decoder_layer(), 2), lambda: (r(2, 3, 8), r(2, 5, 8))),
    "TransformerDecoderLayer": (decoder_layer, lambda: (r(2, 3, 8), r(2, 5, 8))),
    "TransformerEncoder": (lambda: nn.TransformerEncoder(encoder_layer(), 2), lambda: r(2, 5, 8)),
    "TransformerEncoderLayer": (encoder_layer, lambda: r(2, 5, 8)),
    "TripletMarginLoss": (lambda: nn.TripletMarginLoss(), lambda: (r(4, 5), r(4, 5), r(4, 5))),
    "TripletMarginWithDistanceLoss": (lambda: nn.TripletMarginWithDistanceLoss(),
                                      lambda: (r(4, 5), r(4, 5), r(4, 5))),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 2)), seq),
    "Unfold": (lambda: nn.Unfold(2, padding=1), img),
    "Upsample": (lambda: nn.Upsample(scale_factor=1.5, mode="bilinear"), img),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d(scale_factor=2), img),
    "UpsamplingNearest2d": (lambda: nn.UpsamplingNearest2d(size=(9, 7)), img),
    "ZeroPad1d": (lambda: nn.ZeroPad1d(2), seq),
    "ZeroPad2d": (lambda: nn.ZeroPad2d(1), img),
    "ZeroPad3d": (lambda: nn.ZeroPad3d(1), vol),
    "LazyLinear": (lambda: dry_run(nn.LazyLinear(3), seq), seq),
    "LazyConv1d": (lambda: dry_run(nn.LazyConv1d(3, 2), seq), seq),
    "LazyConv2d": (lambda: dry_run(nn.LazyConv2d(3, 3, padding=1), img), img),
    "LazyConv3d": (lambda: dry_run(nn.LazyConv3d(2, 2), vol), vol),
    "LazyConvTranspose1d": (lambda: dry_run(nn.LazyConvTranspose1d(3, 2), seq), seq),
    "LazyConvTranspose2d": (lambda: dry_run(nn.LazyConvTranspose2d(3, 2, stride=2), img), img),
    "LazyConvTranspose3d": (lambda: dry_run(nn.LazyConvTranspose3d(2, 2), vol), vol),
    "LazyBatchNorm1d": (lambda: dry_run(nn.LazyBatchNorm1d(), seq), seq),
    "LazyBatchNorm2d": (lambda: dry_run(nn.LazyBatchNorm2d(), img), img),
    "LazyBatchNorm3d": (lambda: dry_run(nn.LazyBatchNorm3d(), vol), vol),
    "LazyInstanceNorm1d": (lambda: dry_run(nn.LazyInstanceNorm1d(track_running_stats=False), seq), seq),
    "LazyInstanceNorm2d": (lambda: dry_run(nn.LazyInstanceNorm2d(track_running_stats=False), img), img),
    "LazyInstanceNorm3d": (lambda: dry_run(nn.LazyInstanceNorm3d(track_running_stats=False), vol), vol),
}

# class name -> (constructor, example inputs, error type, what the error says, why the layer cannot be exported)
NOT_EXPORTABLE = {
    "AdaptiveLogSoftmaxWithLoss": (
        lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 8]), lambda: (r(4, 8), flow.tensor([1, 5, 9, 0])),
        RuntimeError, r"cannot read the value of a lazy tensor: it is 'output_0' of op '[\w-]*count_nonzero",
        "its forward picks each cluster's rows by the targets' values (a Python branch on data)"),
    "CTCLoss": (
        lambda: nn.CTCLoss(), lambda: (r(6, 2, 4).log_softmax(2), flow.tensor([[1, 2], [3, 1]]), flow.tensor([6, 5]),
                                       flow.tensor([2, 1])),
        flow.onnx.UnsupportedOperatorError, r"of type 'ctc_loss' in nn.Graph '\w+' has no ONNX mapping",
        "ONNX has no CTC loss operator"),
    "FractionalMaxPool2d": (
        lambda: nn.FractionalMaxPool2d(2, output_size=3), img,
        flow.onnx.UnsupportedOperatorError, r"of type 'uniform' in nn.Graph '\w+' has no ONNX mapping",
        "its pooling regions come from random samples drawn at each call"),
    "FractionalMaxPool3d": (
        lambda: nn.FractionalMaxPool3d(2, output_size=2), vol,
        flow.onnx.UnsupportedOperatorError, r"of type 'uniform' in nn.Graph '\w+' has no ONNX mapping",
        "its pooling regions come from random samples drawn at each call"),
}

# classes that are not layers one can call on example inputs
NOT_LAYERS = {
    "Module": "the base class", "RNNBase": "the base of RNN / LSTM / GRU", "RNNCellBase": "the base of the cells",
    "ModuleList": "a container without forward", "ModuleDict": "a container without forward",
    "ParameterList": "a container without forward", "ParameterDict": "a container without forward",
}


def _layer_classes():
    return sorted(n for n in dir(nn) if isinstance(getattr(nn, n), type) and issubclass(getattr(nn, n), nn.Module))


def test_every_nn_layer_class_is_listed():
    listed = set(LAYERS) | set(NOT_EXPORTABLE) | set(NOT_LAYERS)
    assert sorted(set(_layer_classes()) - listed) == [], "a new nn layer: add it to a table of this file"
    assert sorted(listed - set(_layer_classes())) == []


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _leaves(v)]
    return [value]


def _build(name, table):
    flow.manual_seed(7)
    make, inputs = table[name][:2]
    args = inputs()
    return make().eval(), args if isinstance(args, tuple) else (args,)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_nn_layer_exports_and_matches_onnx_runtime(name):
    model, args = _build(name, LAYERS)
    proto = flow.onnx.export(model, args)
    onnx.checker.check_model(proto, full_check=True)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {i.name: a.numpy() for i, a in zip(proto.graph.input, args)})
    expected = _leaves(model(*args))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == tuple(e.shape) and g.dtype == e.numpy().dtype
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("name", sorted(NOT_EXPORTABLE))
def test_nn_layer_that_cannot_be_exported_says_why(name):
    model, args = _build(name, NOT_EXPORTABLE)
    error, match = NOT_EXPORTABLE[name][2:4]
    with pytest.raises(error, match=match):
        flow.onnx.export(model, args)


# the axis made dynamic: dim 0 (the batch, or the time of a sequence-first RNN, unrolled when captured: see below)
BATCH_AXIS = {"GRU": 1, "RNN": 1}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_nn_layer_exports_with_a_dynamic_batch(name):
    """Each layer exported with the batch axis of every input dynamic, run on a batch three times larger."""
    model, args = _build(name, LAYERS)
    axis = BATCH_AXIS.get(name, 0)
    names = [f"in{i}" for i in range(len(args))]
    proto = flow.onnx.export(model, args, input_names=names, dynamic_axes={n: {axis: "batch"} for n in names})
    bigger = [flow.tensor(np.concatenate([a.numpy()] * 3, axis)) for a in args]
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {n: a.numpy() for n, a in zip(names, bigger)})
    expected = _leaves(model(*bigger))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5, err_msg=name)


def test_a_sequence_first_rnn_with_a_dynamic_time_axis_says_why_not():
    model, args = _build("GRU", LAYERS)
    with pytest.raises(flow.onnx.UnsupportedOperatorError, match=r"captures different ops when a dynamic axis changes"):
        flow.onnx.export(model, args, input_names=["x"], dynamic_axes={"x": {0: "time"}})


def test_a_number_that_varies_with_a_dynamic_axis_is_computed_or_named():
    """A mean's divisor (the element count) follows the batch; a number not affine in it raises naming the op."""
    proto = flow.onnx.export(nn.MSELoss(), pair(), input_names=["a", "b"],
                             dynamic_axes={"a": {0: "batch"}, "b": {0: "batch"}})
    a, b = r(7, 5), r(7, 5)
    (got,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"a": a.numpy(), "b": b.numpy()})
    np.testing.assert_allclose(got, ((a.numpy() - b.numpy()) ** 2).mean(), rtol=1e-6)
    with pytest.raises(flow.onnx.UnsupportedOperatorError, match=r"the number operand of op 'scalar_mul-\d+' "
                                                                 r"\(scalar_mul\) varies with the dynamic axes as no "
                                                                 r"integer affine form"):
        flow.onnx.export(lambda x: x * (1 / x.shape[0]), r(4, 3), input_names=["x"], dynamic_axes={"x": [0]})
    with pytest.raises(flow.onnx.UnsupportedOperatorError,
                       match=r"attr 'threshold_val' of op 'threshold-\d+' \(threshold\) varies with the dynamic axes "
                             r"\(4\.0 for the example inputs, 5\.0 with an axis longer\)"):
        flow.onnx.export(lambda x: F.threshold(x, float(x.shape[0]), 0.0), r(4, 3), input_names=["x"],
                         dynamic_axes={"x": [0]})


def test_embedding_bag_exports_fixed_size_bags_and_names_what_it_cannot():
    """A 2-D input (each row a bag) of mode sum (with per-sample weights) or mean is exported; bags laid out by
    offsets, or mode max, are read from the index values while capturing, which the error names."""
    flow.manual_seed(0)
    bag = nn.EmbeddingBag(10, 3, mode="sum").eval()
    idx, psw = flow.tensor([[1, 2, 2, 7], [9, 0, 4, 4]]), flow.rand(2, 4)
    proto = flow.onnx.export(lambda i, p: bag(i, per_sample_weights=p), (idx, psw), input_names=["idx", "psw"],
                             dynamic_axes={"idx": {0: "batch"}, "psw": {0: "batch"}})
    idx, psw = flow.tensor(np.random.default_rng(0).integers(0, 10, (5, 4))), flow.rand(5, 4)
    (got,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"idx": idx.numpy(), "psw": psw.numpy()})
    w = bag.weight.numpy()
    np.testing.assert_allclose(got, (w[idx.numpy()] * psw.numpy()[..., None]).sum(1), rtol=1e-5, atol=1e-6)
    lazy_read = r"embedding_bag \(which lays out the bags by the index values\): cannot read the value of a lazy tensor"
    with pytest.raises(RuntimeError, match=lazy_read):
        flow.onnx.export(nn.EmbeddingBag(10, 3), (flow.tensor([1, 2, 9, 0]), flow.tensor([0, 3])))
    with pytest.raises(RuntimeError, match=lazy_read):
        flow.onnx.export(nn.EmbeddingBag(10, 3, mode="max"), flow.tensor([[1, 2], [9, 0]]))
