from . import attr_value_pb2 as _attr_value_pb2
from . import user_op_conf_pb2 as _user_op_conf_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InputOpConf(_message.Message):
    __slots__ = ("out", "shape", "data_type")
    OUT_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    out: str
    shape: _attr_value_pb2.ShapeProto
    data_type: _attr_value_pb2.DataType
    def __init__(self, out: _Optional[str] = ..., shape: _Optional[_Union[_attr_value_pb2.ShapeProto, _Mapping]] = ..., data_type: _Optional[_Union[_attr_value_pb2.DataType, str]] = ...) -> None: ...

class VariableOpConf(_message.Message):
    __slots__ = ("out", "shape", "data_type", "trainable")
    OUT_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    TRAINABLE_FIELD_NUMBER: _ClassVar[int]
    out: str
    shape: _attr_value_pb2.ShapeProto
    data_type: _attr_value_pb2.DataType
    trainable: bool
    def __init__(self, out: _Optional[str] = ..., shape: _Optional[_Union[_attr_value_pb2.ShapeProto, _Mapping]] = ..., data_type: _Optional[_Union[_attr_value_pb2.DataType, str]] = ..., trainable: bool = ...) -> None: ...

class OutputOpConf(_message.Message):
    __slots__ = ("out", "shape", "data_type")
    IN_FIELD_NUMBER: _ClassVar[int]
    OUT_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    out: str
    shape: _attr_value_pb2.ShapeProto
    data_type: _attr_value_pb2.DataType
    def __init__(self, out: _Optional[str] = ..., shape: _Optional[_Union[_attr_value_pb2.ShapeProto, _Mapping]] = ..., data_type: _Optional[_Union[_attr_value_pb2.DataType, str]] = ..., **kwargs) -> None: ...

class OperatorConf(_message.Message):
    __slots__ = ("name", "device_tag", "user_conf", "input_conf", "variable_conf", "output_conf")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TAG_FIELD_NUMBER: _ClassVar[int]
    USER_CONF_FIELD_NUMBER: _ClassVar[int]
    INPUT_CONF_FIELD_NUMBER: _ClassVar[int]
    VARIABLE_CONF_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_CONF_FIELD_NUMBER: _ClassVar[int]
    name: str
    device_tag: str
    user_conf: _user_op_conf_pb2.UserOpConf
    input_conf: InputOpConf
    variable_conf: VariableOpConf
    output_conf: OutputOpConf
    def __init__(self, name: _Optional[str] = ..., device_tag: _Optional[str] = ..., user_conf: _Optional[_Union[_user_op_conf_pb2.UserOpConf, _Mapping]] = ..., input_conf: _Optional[_Union[InputOpConf, _Mapping]] = ..., variable_conf: _Optional[_Union[VariableOpConf, _Mapping]] = ..., output_conf: _Optional[_Union[OutputOpConf, _Mapping]] = ...) -> None: ...
