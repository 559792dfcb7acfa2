"""flow.utils.tensorboard (torch.utils.tensorboard under mock_torch): SummaryWriter's event files, decoded here with
an independent CRC-32C (bit by bit, checked on the standard check value) and protobuf messages declared from
TensorFlow's event.proto / summary.proto field numbers."""

import glob
import os
import struct

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import oneflow_lite as flow
from oneflow_lite.utils.tensorboard import SummaryWriter


def _crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _masked(data):
    c = _crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_check_value():
    assert _crc32c(b"123456789") == 0xE3069283  # the CRC-32C (Castagnoli) check value
    from oneflow_lite.utils.tensorboard.event_file import crc32c
    assert crc32c(b"123456789") == 0xE3069283


def _messages():
    """tensorflow.Event and the messages it holds, built from their .proto field numbers."""
    f = descriptor_pb2.FileDescriptorProto(name="tb_test_event.proto", package="tbtest", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto
    opt, rep = T.LABEL_OPTIONAL, T.LABEL_REPEATED

    def msg(name, *fields):
        m = f.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            fd = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                fd.type_name = f".tbtest.{type_name}"

    msg("Dim", ("size", 1, T.TYPE_INT64, opt, None))
    msg("Shape", ("dim", 2, T.TYPE_MESSAGE, rep, "Dim"))
    msg("Tensor", ("dtype", 1, T.TYPE_INT32, opt, None), ("tensor_shape", 2, T.TYPE_MESSAGE, opt, "Shape"),
        ("string_val", 8, T.TYPE_BYTES, rep, None))
    msg("PluginData", ("plugin_name", 1, T.TYPE_STRING, opt, None), ("content", 2, T.TYPE_BYTES, opt, None))
    msg("Metadata", ("plugin_data", 1, T.TYPE_MESSAGE, opt, "PluginData"))
    msg("Value", ("tag", 1, T.TYPE_STRING, opt, None), ("simple_value", 2, T.TYPE_FLOAT, opt, None),
        ("tensor", 8, T.TYPE_MESSAGE, opt, "Tensor"), ("metadata", 9, T.TYPE_MESSAGE, opt, "Metadata"))
    msg("Summary", ("value", 1, T.TYPE_MESSAGE, rep, "Value"))
    msg("Event", ("wall_time", 1, T.TYPE_DOUBLE, opt, None), ("step", 2, T.TYPE_INT64, opt, None),
        ("file_version", 3, T.TYPE_STRING, opt, None), ("summary", 5, T.TYPE_MESSAGE, opt, "Summary"))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tbtest.Event"))


Event = _messages()


def _events(path):
    """The events of one file, every record's length and data CRC checked."""
    data = open(path, "rb").read()
    out, i = [], 0
    while i < len(data):
        length_bytes = data[i:i + 8]
        (n,) = struct.unpack("<Q", length_bytes)
        assert struct.unpack("<I", data[i + 8:i + 12])[0] == _masked(length_bytes)
        body = data[i + 12:i + 12 + n]
        assert struct.unpack("<I", data[i + 12 + n:i + 16 + n])[0] == _masked(body)
        out.append(Event.FromString(body))
        i += 16 + n
    return out


def test_scalars_scalars_and_text_are_read_back(tmp_path):
    with SummaryWriter(log_dir=str(tmp_path)) as w:
        assert w.get_logdir() == str(tmp_path)
        for step, v in enumerate([2.5, flow.tensor(1.25), np.float32(0.5)]):
            w.add_scalar("Loss/train", v, step, walltime=100.0 + step)
        w.add_scalars("run", {"a": 1.0, "b/c": flow.tensor([3.0])}, global_step=7)
        w.add_text("note", "héllo", 2)
    (main,) = glob.glob(str(tmp_path / "events.out.tfevents.*"))
    events = _events(main)
    assert events[0].file_version == "brain.Event:2" and events[0].wall_time > 1e9
    scalars = [(e.step, e.wall_time, e.summary.value[0].tag, e.summary.value[0].simple_value) for e in events[1:4]]
    assert scalars == [(0, 100.0, "Loss/train", 2.5), (1, 101.0, "Loss/train", 1.25), (2, 102.0, "Loss/train", 0.5)]
    text = events[4].summary.value[0]
    assert events[4].step == 2 and text.tag == "note/text_summary"
    assert text.metadata.plugin_data.plugin_name == "text" and text.tensor.dtype == 7  # DT_STRING
    assert [d.size for d in text.tensor.tensor_shape.dim] == [1] and text.tensor.string_val == ["héllo".encode()]
    for sub, value in (("run_a", 1.0), ("run_b_c", 3.0)):
        (path,) = glob.glob(str(tmp_path / sub / "events.out.tfevents.*"))
        (e,) = _events(path)[1:]
        assert (e.step, e.summary.value[0].tag, e.summary.value[0].simple_value) == (7, "run", value)


def test_default_log_dir_and_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp")
    assert os.listdir(w.get_logdir())[0].startswith("events.out.tfevents.")
    with pytest.raises(ValueError, match=r"SummaryWriter.add_scalar: expected a scalar, got a tensor of shape \(2,\)"):
        w.add_scalar("x", flow.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="SummaryWriter.add_scalar: expected a number"):
        w.add_scalar("x", "one")
    with pytest.raises(TypeError, match="add_text: text_string must be a str"):
        w.add_text("x", 3)
    with pytest.raises(NotImplementedError, match="SummaryWriter.add_image is not provided by oneflow_lite"):
        w.add_image("x", None)
    w.close()
    with pytest.raises(RuntimeError, match="is closed"):
        w.add_scalar("x", 1.0)


def test_import_under_mock_torch(tmp_path):
    with flow.mock_torch.enable():
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
    assert TorchWriter is SummaryWriter
