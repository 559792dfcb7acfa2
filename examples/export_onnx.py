"""Train the digits CNN for a few epochs as an ``nn.Graph``, export its evaluation graph to ONNX with a dynamic
batch dimension, and run the file in ONNX Runtime: its predictions match oneflow_lite's.

    pip install 'oneflow-lite[onnx]'        # onnx and onnxruntime
    python examples/export_onnx.py [--epochs 2] [--output digits_cnn.onnx] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import oneflow_lite as flow
from oneflow_lite import nn
from oneflow_lite.utils.data import DataLoader
from oneflow_lite.utils.data.datasets import digits


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )


class TrainGraph(nn.Graph):
    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


class EvalGraph(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Export the digits CNN to ONNX and run it in ONNX Runtime.")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs (default: 2)")
    parser.add_argument("--output", default="digits_cnn.onnx", help="the ONNX file (default: digits_cnn.onnx)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and batches (default: 0)")
    args = parser.parse_args(argv)
    if args.epochs < 0:
        parser.error(f"--epochs must be >= 0, got {args.epochs}")
    try:
        import onnxruntime as ort
    except ImportError:
        print("this example needs onnx and onnxruntime: pip install 'oneflow-lite[onnx]'", file=sys.stderr)
        return 2

    flow.manual_seed(args.seed)
    model = make_model()
    train = TrainGraph(model, flow.optim.Adam(model.parameters(), lr=0.01))
    loader = DataLoader(digits(train=True), batch_size=64, shuffle=True, drop_last=True,
                        generator=flow.Generator().manual_seed(args.seed))
    for epoch in range(1, args.epochs + 1):
        model.train()
        losses = [train(x, y).item() for x, y in loader]
        print(f"epoch {epoch}/{args.epochs}: loss {np.mean(losses):.4f}")

    model.eval()
    test_x, test_y = digits(train=False).tensors
    evaluate = EvalGraph(model)
    expected = evaluate(test_x[:8])
    proto = evaluate.export_onnx(args.output, input_names=["image"], output_names=["logits"],
                                 dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    print(f"exported {len(proto.graph.node)} ONNX nodes and {len(proto.graph.initializer)} initializers to "
          f"{args.output} (opset {proto.opset_import[0].version})")

    session = ort.InferenceSession(args.output, providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, {"image": test_x.numpy()})  # all 360 test images: the batch is dynamic
    ours = EvalGraph(model)(test_x).numpy()
    diff = float(np.abs(logits - ours).max())
    accuracy = float((logits.argmax(1) == test_y.numpy()).mean())
    same = bool((logits.argmax(1) == ours.argmax(1)).all())
    print(f"ONNX Runtime on {len(test_x)} test images: accuracy {100 * accuracy:.2f}%, max |difference| from "
          f"oneflow_lite {diff:.2e}, same predictions: {same}")
    assert np.allclose(session.run(None, {"image": test_x[:8].numpy()})[0], expected.numpy(), atol=1e-4)
    return 0 if diff < 1e-4 and same else 1


if __name__ == "__main__":
    sys.exit(main())
