"""``SummaryWriter``: PyTorch's ``torch.utils.tensorboard.SummaryWriter`` for scalars and text."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

from oneflow_lite.utils.tensorboard.event_file import EventFileWriter, event, scalar_summary, text_summary

# PyTorch's SummaryWriter methods that log what this writer does not encode (images, histograms, graphs, ...).
_NOT_PROVIDED = frozenset((
    "add_audio", "add_custom_scalars", "add_custom_scalars_marginchart", "add_custom_scalars_multilinechart",
    "add_embedding", "add_figure", "add_graph", "add_histogram", "add_histogram_raw", "add_hparams", "add_image",
    "add_image_with_boxes", "add_images", "add_mesh", "add_onnx_graph", "add_pr_curve", "add_pr_curve_raw",
    "add_tensor", "add_video"))


def _number(what: str, value) -> float:
    item = getattr(value, "item", None)
    if callable(item):
        if getattr(value, "numel", lambda: 1)() != 1:
            raise ValueError(f"SummaryWriter.{what}: expected a scalar, got a tensor of shape {tuple(value.shape)}")
        value = item()
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"SummaryWriter.{what}: expected a number or a one-element tensor, got "
                        f"{type(value).__name__}") from None


class SummaryWriter:
    """Writes scalars (``add_scalar``, ``add_scalars``) and text (``add_text``) to an event file in ``log_dir``
    (default ``runs/<date>_<host><comment>``, as PyTorch), which TensorBoard reads."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step, self.max_queue, self.flush_secs = purge_step, max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = EventFileWriter(self.log_dir, filename_suffix)
        self.all_writers = {self.file_writer.path: self.file_writer}
        self._scalar_writers: dict[str, EventFileWriter] = {}

    def get_logdir(self) -> str:
        return self.log_dir

    def _write(self, writer, summary: bytes, global_step, walltime) -> None:
        step = 0 if global_step is None else int(_number("global_step", global_step))
        writer.write(event(time.time() if walltime is None else float(walltime), step, summary=summary))

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False, double_precision=False):
        """Log ``scalar_value`` (a number or a one-element tensor) under ``tag`` at ``global_step``."""
        self._write(self.file_writer, scalar_summary(str(tag), _number("add_scalar", scalar_value)), global_step,
                    walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several scalars in one chart: each key gets its own run directory ``<log_dir>/<main_tag>_<key>``
        (as PyTorch), the values all under ``main_tag``."""
        if not isinstance(tag_scalar_dict, dict):
            raise TypeError(f"SummaryWriter.add_scalars: tag_scalar_dict must be a dict, got "
                            f"{type(tag_scalar_dict).__name__}")
        for tag, value in tag_scalar_dict.items():
            directory = os.path.join(self.log_dir, f"{main_tag}_{tag}".replace("/", "_"))
            writer = self._scalar_writers.get(directory)
            if writer is None:
                writer = self._scalar_writers[directory] = EventFileWriter(directory, self.filename_suffix)
                self.all_writers[writer.path] = writer
            self._write(writer, scalar_summary(str(main_tag), _number("add_scalars", value)), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log ``text_string`` (TensorBoard's text plugin, tag ``<tag>/text_summary``)."""
        if not isinstance(text_string, str):
            raise TypeError(f"SummaryWriter.add_text: text_string must be a str, got {type(text_string).__name__}")
        self._write(self.file_writer, text_summary(f"{tag}/text_summary", text_string), global_step, walltime)

    def flush(self) -> None:
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self.all_writers.values():
            writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getattr__(self, name):
        if name in _NOT_PROVIDED:
            raise NotImplementedError(f"torch.utils.tensorboard.SummaryWriter.{name} is not provided by oneflow_lite "
                                      f"(only add_scalar, add_scalars and add_text)")
        raise AttributeError(f"'SummaryWriter' object has no attribute '{name}'")
