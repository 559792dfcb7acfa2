"""The training demo run by ``python -m oneflow_lite demo``.

It trains a classifier of the 8x8 handwritten digits shipped with the package
(``flow.utils.data.datasets.digits``) twice from the same initial weights and the
same batches: eagerly (each op runs as it is called) and as an ``nn.Graph`` whose
captured job holds the forward pass, the backward pass and the optimizer step
(``add_optimizer``). Each epoch prints its loss, accuracy and speed; a summary
table compares the two runs and shows what the graph compiler's passes did.
Everything it uses is public API: ``flow.nn``, ``flow.optim``, ``flow.utils.data``,
``flow.nn.Graph``, ``flow.save`` / ``flow.load``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys
import time

import numpy as np

import oneflow_lite as flow
from oneflow_lite import nn

MODELS = ("mlp", "cnn")
OPTIMIZERS = ("sgd", "adam")
SCHEDULES = ("cosine", "constant")
MODES = ("both", "eager", "graph")
DEFAULT_EPOCHS = 10
DEFAULT_LR = {"sgd": 0.1, "adam": 0.002}
SGD_MOMENTUM = 0.9
NUM_CLASSES = 10


def build_model(kind: str) -> nn.Module:
    """The demo's models for (N, 1, 8, 8) images: ``"mlp"`` (two hidden layers of 128 and 64 units) or
    ``"cnn"`` (two 3x3 convolutions with max pooling, then a linear classifier)."""
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                             nn.Linear(64, NUM_CLASSES))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(32 * 2 * 2, NUM_CLASSES))
    raise ValueError(f"build_model(): model must be one of {', '.join(MODELS)}, got {kind!r}")


class TrainGraph(nn.Graph):
    """One training step as a graph: forward, loss, backward and (by ``add_optimizer``) the update."""

    def __init__(self, model, loss_fn, optimizer, scheduler=None):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.add_optimizer(optimizer, lr_sch=scheduler)

    def build(self, x, y):
        logits = self.model(x)
        loss = self.loss_fn(logits, y)
        loss.backward()
        return loss, (logits.argmax(1) == y).sum()


class EvalGraph(nn.Graph):
    """The predicted classes of a batch, as a graph (call it with the model in eval mode)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x).argmax(1)


@dataclasses.dataclass
class RunResult:
    """What one training run (eager or graph) measured; accuracies are fractions in [0, 1]."""

    mode: str
    model: nn.Module
    epoch_seconds: list = dataclasses.field(default_factory=list)
    epoch_losses: list = dataclasses.field(default_factory=list)
    train_accuracies: list = dataclasses.field(default_factory=list)
    test_accuracies: list = dataclasses.field(default_factory=list)
    samples_per_epoch: int = 0
    first_step_seconds: float = 0.0
    graph: TrainGraph | None = None

    @property
    def test_accuracy(self) -> float:
        return self.test_accuracies[-1]

    @property
    def median_epoch_seconds(self) -> float:
        return statistics.median(self.epoch_seconds)


# ---- command line -------------------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {text}")
    return value


DESCRIPTION = ("Train a classifier of the 8x8 handwritten digits (1,437 training and 360 test images, shipped with "
               "the package) eagerly and as an nn.Graph, from the same initial weights and batches. Prints a "
               "line per epoch (mean training loss, training and test accuracy, training samples per second), "
               "then a summary: test accuracy and time per epoch of each mode, and the training graph's op "
               "count before and after the compiler's passes.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options (``python -m oneflow_lite demo --help``)."""
    parser.add_argument("--model", choices=MODELS, default="mlp",
                        help="mlp: Flatten, Linear 64-128-64-10 with ReLU (default); "
                             "cnn: two Conv2d 3x3 + ReLU + MaxPool2d blocks (16, 32 channels), then Linear")
    parser.add_argument("--epochs", type=_positive_int, default=DEFAULT_EPOCHS, metavar="N",
                        help=f"passes over the 1,437 training images (default: {DEFAULT_EPOCHS})")
    parser.add_argument("--batch-size", type=_positive_int, default=32, metavar="N",
                        help="images per training step (default: 32); the last incomplete batch of an epoch is "
                             "dropped, so every step of the graph has the same input signature")
    parser.add_argument("--lr", type=_positive_float, default=None,
                        help=f"initial learning rate (default: {DEFAULT_LR['sgd']} for sgd, "
                             f"{DEFAULT_LR['adam']} for adam)")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd",
                        help=f"sgd: flow.optim.SGD with momentum {SGD_MOMENTUM} (default); adam: flow.optim.Adam")
    parser.add_argument("--schedule", choices=SCHEDULES, default="cosine",
                        help="learning-rate schedule: cosine decay to 0 over all steps "
                             "(flow.optim.lr_scheduler.CosineAnnealingLR, stepped after every batch; default) "
                             "or constant")
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds the initial weights and the shuffling of the batches (default: 0); both modes "
                             "start from the same weights and see the same batches")
    parser.add_argument("--mode", choices=MODES, default="both",
                        help="train eagerly, as an nn.Graph (forward, backward and optimizer step in one captured "
                             "job), or both one after the other and compare them (default: both)")
    parser.add_argument("--print-graph", action="store_true",
                        help="print the training graph after training: its captured ops by module, what each "
                             "compiler pass changed, and the plan (needs --mode both or graph)")
    parser.add_argument("--save", metavar="PATH",
                        help="save the trained model's state_dict with flow.save (the graph-trained one with "
                             "--mode both), load it back with flow.load into a new model and check its test "
                             "accuracy")
    parser.add_argument("--nproc", type=_positive_int, default=1, metavar="N",
                        help="train data-parallel over N processes (an MPI job started with mpiexec; needs "
                             "pip install 'oneflow_lite[dist]'): global tensors, each batch split(0) over the "
                             "ranks and the parameters broadcast, eagerly and as an nn.Graph (default: 1)")


def make_parser(prog: str = "python -m oneflow_lite demo") -> argparse.ArgumentParser:
    """A parser of the demo's options alone (``make_parser().parse_args([...])`` gives what :func:`run` takes)."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    add_arguments(parser)
    return parser


def check_options(args: argparse.Namespace) -> str | None:
    """An error message for options that do not go together, or None."""
    if args.batch_size > flow.utils.data.datasets.DIGITS_NUM_TRAIN:
        return (f"--batch-size must be at most {flow.utils.data.datasets.DIGITS_NUM_TRAIN} (the number of "
                f"training images), got {args.batch_size}")
    if args.print_graph and args.mode == "eager":
        return "--print-graph needs a graph run: use --mode both or --mode graph"
    if args.save is not None:
        folder = os.path.dirname(os.path.abspath(args.save))
        if not os.path.isdir(folder):
            return f"--save: the directory {folder} does not exist"
    return None


# ---- training -------------------------------------------------------------------------------------------
def _optimizer(args, params):
    if args.optimizer == "sgd":
        return flow.optim.SGD(params, lr=args.lr, momentum=SGD_MOMENTUM)
    return flow.optim.Adam(params, lr=args.lr)


def _accuracy(predicted, labels) -> float:
    return (predicted == labels).sum().item() / labels.shape[0]


def train(mode: str, args: argparse.Namespace, train_set, test_set, say) -> RunResult:
    """Train a new model (seeded with ``args.seed``) eagerly (``mode="eager"``) or as a graph; report each
    epoch through ``say(text)``."""
    if mode not in ("eager", "graph"):
        raise ValueError(f"train(): mode must be 'eager' or 'graph', got {mode!r}")
    flow.manual_seed(args.seed)
    model = build_model(args.model)
    placement = data_parallel_placement(args)
    if placement is not None:
        model.to_global(placement, flow.sbp.broadcast)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = _optimizer(args, model.parameters())
    generator = flow.Generator()
    generator.manual_seed(args.seed)
    loader = flow.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, drop_last=True,
                                        generator=generator)
    steps = len(loader)
    scheduler = (flow.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * steps)
                 if args.schedule == "cosine" else None)
    test_x, test_y = test_set.tensors
    result = RunResult(mode, model, samples_per_epoch=steps * args.batch_size)
    step, predict = _step_and_predict(mode, model, loss_fn, optimizer, scheduler, result)
    if placement is not None:
        step, predict, test_x, test_y = _data_parallel(step, predict, test_x, test_y, placement)
        result.mode = f"{mode}, {placement.size} ranks"
    width = len(str(args.epochs))
    for epoch in range(1, args.epochs + 1):
        loss_sum, correct, seconds = _train_epoch(model, loader, step, result)
        model.eval()
        test_accuracy = _accuracy(predict(test_x), test_y)
        result.epoch_seconds.append(seconds)
        result.epoch_losses.append(loss_sum / steps)
        result.train_accuracies.append(correct / result.samples_per_epoch)
        result.test_accuracies.append(test_accuracy)
        say(f"[{result.mode:<5}] epoch {epoch:>{width}}/{args.epochs}  loss {loss_sum / steps:.4f}  "
            f"train acc {100 * correct / result.samples_per_epoch:6.2f}%  test acc {100 * test_accuracy:6.2f}%  "
            f"{result.samples_per_epoch / seconds:>9,.0f} samples/s  ({seconds:.3f} s)")
    return result


# ---- data parallel over processes (--nproc) ---------------------------------------------------------------
def data_parallel_placement(args):
    """The placement of every rank when the demo runs data-parallel (``--nproc`` > 1 in an MPI job), else None."""
    if getattr(args, "nproc", 1) == 1:
        return None
    if flow.env.get_world_size() != args.nproc:
        raise RuntimeError(f"demo: --nproc {args.nproc} in a job of {flow.env.get_world_size()} process(es)")
    return flow.placement.all("cpu")


def _data_parallel(step, predict, test_x, test_y, placement) -> tuple:
    """``step`` and ``predict`` on global batches: each rank takes its part of the batch (every rank's loader
    gives the same batches) and the parts make the batch split(0)."""
    split = flow.sbp.split(0)
    rank, n = flow.env.get_rank(), flow.env.get_world_size()

    def shard(t):
        size = t.shape[0]
        start, length = rank * (size // n) + min(rank, size % n), size // n + (rank < size % n)
        # even parts: the logical shape is known without asking the other ranks
        return t[start:start + length].to_global(placement, split, check_meta=bool(size % n))

    def global_step(x, y):
        return step(shard(x), shard(y))
    return global_step, predict, shard(test_x), shard(test_y)


def launch_data_parallel(args, argv) -> int:
    """Run the demo as an MPI job of ``args.nproc`` processes (``argv``: the demo's own arguments)."""
    from oneflow_lite.distributed.launch import find_mpiexec
    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise RuntimeError("demo --nproc: mpiexec not found; pip install 'oneflow_lite[dist]' (mpi4py and mpich)")
    import subprocess
    return subprocess.call([mpiexec, "-n", str(args.nproc), sys.executable, "-m", "oneflow_lite", "demo", *argv])


def _step_and_predict(mode: str, model, loss_fn, optimizer, scheduler, result: RunResult) -> tuple:
    """``step(x, y) -> (loss, correct count)`` and ``predict(x) -> labels``: nn.Graphs in graph mode (the
    training graph is kept in ``result.graph``), plain eager code otherwise."""
    if mode == "graph":
        step = result.graph = TrainGraph(model, loss_fn, optimizer, scheduler)
        eval_graph = EvalGraph(model)

        def predict(x):
            return eval_graph(x)
        return step, predict

    def step(x, y):
        optimizer.zero_grad()
        logits = model(x)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        return loss, (logits.argmax(1) == y).sum()

    def predict(x):
        with flow.no_grad():
            return model(x).argmax(1)
    return step, predict


def _train_epoch(model, loader, step, result: RunResult) -> tuple:
    """One pass over ``loader`` in training mode: ``(loss sum, correct count, seconds)``; the first step's
    time goes into ``result.first_step_seconds``."""
    model.train()
    loss_sum = 0.0
    correct = 0
    start = time.perf_counter()
    for x, y in loader:
        loss, batch_correct = step(x, y)
        if not result.first_step_seconds:
            result.first_step_seconds = time.perf_counter() - start
        loss_sum += loss.item()
        correct += batch_correct.item()
    return loss_sum, correct, time.perf_counter() - start


def _layer_text(m) -> str:
    if isinstance(m, nn.Linear):
        return f"Linear({m.in_features}, {m.out_features})"
    if isinstance(m, nn.Conv2d):
        return f"Conv2d({m.in_channels}, {m.out_channels}, {m.kernel_size[0]}x{m.kernel_size[1]})"
    if isinstance(m, nn.MaxPool2d):
        return f"MaxPool2d({m.kernel_size})"
    return type(m).__name__


def _describe_model(model) -> str:
    params = sum(p.numel() for p in model.parameters())
    return f"{' -> '.join(_layer_text(m) for m in model.children())}; {params:,} parameters"


def _table(rows, out) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        print("  ".join(cells).rstrip(), file=out)


def summarize(results: list, out) -> None:
    """The summary table of one or two runs (columns in the order of ``results``)."""
    def ms(s):
        return f"{s * 1e3:.1f} ms"

    rows = [("", *[r.mode for r in results]),
            ("test accuracy", *[f"{100 * r.test_accuracy:.2f}%" for r in results]),
            ("training loss (last epoch)", *[f"{r.epoch_losses[-1]:.4f}" for r in results]),
            ("time per epoch (median)", *[f"{r.median_epoch_seconds:.3f} s" for r in results]),
            ("training samples/s (median)", *[f"{r.samples_per_epoch / r.median_epoch_seconds:,.0f}"
                                              for r in results])]
    graph_run = next((r for r in results if r.graph is not None), None)
    rows.append(("first step (graph: capture + compile + run)" if graph_run is not None else "first step",
                 *[ms(r.first_step_seconds) for r in results]))
    if graph_run is not None:
        before = len(graph_run.graph.captured_job.net.op)
        after = len(graph_run.graph.job.net.op)
        rows.append(("training graph ops: captured -> after passes",
                     *[f"{before} -> {after}" if r is graph_run else "-" for r in results]))
    print("summary", file=out)
    _table(rows, out)
    if len(results) == 2:
        eager, graph = results
        diff = max(float(np.max(np.abs(p.numpy() - q.numpy())))
                   for p, q in zip(eager.model.parameters(), graph.model.parameters()))
        same = "are equal" if diff == 0 else f"differ by at most {diff:.3g}"
        print(f"graph vs eager: {eager.median_epoch_seconds / graph.median_epoch_seconds:.2f}x the speed per "
              f"epoch; the trained parameters {same}", file=out)


def _save_and_reload(args, result: RunResult, test_set, out) -> None:
    flow.save(result.model.state_dict(), args.save)
    model = build_model(args.model)
    model.load_state_dict(flow.load(args.save))
    model.eval()
    test_x, test_y = test_set.tensors
    with flow.no_grad():
        accuracy = _accuracy(model(test_x).argmax(1), test_y)
    print(f"saved the {result.mode}-trained state_dict to {args.save}; a new {args.model} loaded from it "
          f"classifies {100 * accuracy:.2f}% of the test images correctly (after training: "
          f"{100 * result.test_accuracy:.2f}%)", file=out)


def run(args: argparse.Namespace, out=None) -> list:
    """Run the demo with parsed options (``make_parser().parse_args()``); returns the ``RunResult`` of each mode.

    ``args.lr`` may be None (the optimizer's default)."""
    out = out or sys.stdout
    error = check_options(args)
    if error is not None:
        raise ValueError(f"demo: {error}")
    args = argparse.Namespace(**vars(args))
    if args.lr is None:
        args.lr = DEFAULT_LR[args.optimizer]

    quiet = flow.env.get_rank() != 0  # a data-parallel run prints on rank 0 only

    def say(text=""):
        if not quiet:
            print(text, file=out, flush=True)

    train_set = flow.utils.data.datasets.digits(train=True)
    test_set = flow.utils.data.datasets.digits(train=False)
    steps = len(train_set) // args.batch_size
    optimizer = (f"SGD(lr={args.lr:g}, momentum={SGD_MOMENTUM:g})" if args.optimizer == "sgd"
                 else f"Adam(lr={args.lr:g})")
    schedule = "cosine decay per step" if args.schedule == "cosine" else "constant learning rate"
    say(f"oneflow_lite training demo: {args.model} on the 8x8 digits ({len(train_set):,} training / "
        f"{len(test_set)} test images)")
    say(f"model: {_describe_model(build_model(args.model))}")
    say(f"{args.epochs} epoch(s) of {steps} steps of batch {args.batch_size}, {optimizer}, {schedule}, "
        f"seed {args.seed}, mode {args.mode}")
    say()
    modes = ("eager", "graph") if args.mode == "both" else (args.mode,)
    if getattr(args, "nproc", 1) > 1:
        say(f"data parallel over {args.nproc} processes: each batch split(0), parameters broadcast")
        say()
    results = []
    for mode in modes:
        results.append(train(mode, args, train_set, test_set, say))
        say()
    if quiet:
        return results
    summarize(results, out)
    if args.print_graph:
        say()
        say(repr(results[-1].graph))
    if args.save:
        say()
        _save_and_reload(args, results[-1], test_set, out)
    return results

