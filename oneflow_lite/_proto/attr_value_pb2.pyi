from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    kInvalidDataType: _ClassVar[DataType]
    kChar: _ClassVar[DataType]
    kFloat: _ClassVar[DataType]
    kDouble: _ClassVar[DataType]
    kInt8: _ClassVar[DataType]
    kInt32: _ClassVar[DataType]
    kInt64: _ClassVar[DataType]
    kUInt8: _ClassVar[DataType]
    kFloat16: _ClassVar[DataType]
    kBool: _ClassVar[DataType]
    kInt16: _ClassVar[DataType]

class AttrType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    kUndefinedAttrType: _ClassVar[AttrType]
    kAtInt32: _ClassVar[AttrType]
    kAtInt64: _ClassVar[AttrType]
    kAtBool: _ClassVar[AttrType]
    kAtFloat: _ClassVar[AttrType]
    kAtDouble: _ClassVar[AttrType]
    kAtString: _ClassVar[AttrType]
    kAtShape: _ClassVar[AttrType]
    kAtDataType: _ClassVar[AttrType]
    kAtListInt32: _ClassVar[AttrType]
    kAtListInt64: _ClassVar[AttrType]
    kAtListFloat: _ClassVar[AttrType]
    kAtListDataType: _ClassVar[AttrType]
    kAtListShape: _ClassVar[AttrType]
    kAtListString: _ClassVar[AttrType]
    kAtDevice: _ClassVar[AttrType]
kInvalidDataType: DataType
kChar: DataType
kFloat: DataType
kDouble: DataType
kInt8: DataType
kInt32: DataType
kInt64: DataType
kUInt8: DataType
kFloat16: DataType
kBool: DataType
kInt16: DataType
kUndefinedAttrType: AttrType
kAtInt32: AttrType
kAtInt64: AttrType
kAtBool: AttrType
kAtFloat: AttrType
kAtDouble: AttrType
kAtString: AttrType
kAtShape: AttrType
kAtDataType: AttrType
kAtListInt32: AttrType
kAtListInt64: AttrType
kAtListFloat: AttrType
kAtListDataType: AttrType
kAtListShape: AttrType
kAtListString: AttrType
kAtDevice: AttrType

class ShapeProto(_message.Message):
    __slots__ = ("dim",)
    DIM_FIELD_NUMBER: _ClassVar[int]
    dim: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dim: _Optional[_Iterable[int]] = ...) -> None: ...

class DeviceProto(_message.Message):
    __slots__ = ("device_type", "device_id")
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    device_type: str
    device_id: int
    def __init__(self, device_type: _Optional[str] = ..., device_id: _Optional[int] = ...) -> None: ...

class AttrValue(_message.Message):
    __slots__ = ("at_int32", "at_int64", "at_bool", "at_float", "at_double", "at_string", "at_shape", "at_data_type", "at_list_int32", "at_list_int64", "at_list_float", "at_list_data_type", "at_list_shape", "at_list_string", "at_device")
    class ListInt32(_message.Message):
        __slots__ = ("val",)
        VAL_FIELD_NUMBER: _ClassVar[int]
        val: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, val: _Optional[_Iterable[int]] = ...) -> None: ...
    class ListInt64(_message.Message):
        __slots__ = ("val",)
        VAL_FIELD_NUMBER: _ClassVar[int]
        val: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, val: _Optional[_Iterable[int]] = ...) -> None: ...
    class ListFloat(_message.Message):
        __slots__ = ("val",)
        VAL_FIELD_NUMBER: _ClassVar[int]
        val: _containers.RepeatedScalarFieldContainer[float]
        def __init__(self, val: _Optional[_Iterable[float]] = ...) -> None: ...
    class ListDataType(_message.Message):
        __slots__ = ("val",)
        VAL_FIELD_NUMBER: _ClassVar[int]
        val: _containers.RepeatedScalarFieldContainer[DataType]
        def __init__(self, val: _Optional[_Iterable[_Union[DataType, str]]] = ...) -> None: ...
    class ListShape(_message.Message):
        __slots__ = ("val",)
        VAL_FIELD_NUMBER: _ClassVar[int]
        val: _containers.RepeatedCompositeFieldContainer[ShapeProto]
        def __init__(self, val: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ...) -> None: ...
    class ListString(_message.Message):
        __slots__ = ("val",)
        VAL_FIELD_NUMBER: _ClassVar[int]
        val: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, val: _Optional[_Iterable[str]] = ...) -> None: ...
    AT_INT32_FIELD_NUMBER: _ClassVar[int]
    AT_INT64_FIELD_NUMBER: _ClassVar[int]
    AT_BOOL_FIELD_NUMBER: _ClassVar[int]
    AT_FLOAT_FIELD_NUMBER: _ClassVar[int]
    AT_DOUBLE_FIELD_NUMBER: _ClassVar[int]
    AT_STRING_FIELD_NUMBER: _ClassVar[int]
    AT_SHAPE_FIELD_NUMBER: _ClassVar[int]
    AT_DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    AT_LIST_INT32_FIELD_NUMBER: _ClassVar[int]
    AT_LIST_INT64_FIELD_NUMBER: _ClassVar[int]
    AT_LIST_FLOAT_FIELD_NUMBER: _ClassVar[int]
    AT_LIST_DATA_TYPE_FIELD_NUMBER: _ClassVar[int]
    AT_LIST_SHAPE_FIELD_NUMBER: _ClassVar[int]
    AT_LIST_STRING_FIELD_NUMBER: _ClassVar[int]
    AT_DEVICE_FIELD_NUMBER: _ClassVar[int]
    at_int32: int
    at_int64: int
    at_bool: bool
    at_float: float
    at_double: float
    at_string: str
    at_shape: ShapeProto
    at_data_type: DataType
    at_list_int32: AttrValue.ListInt32
    at_list_int64: AttrValue.ListInt64
    at_list_float: AttrValue.ListFloat
    at_list_data_type: AttrValue.ListDataType
    at_list_shape: AttrValue.ListShape
    at_list_string: AttrValue.ListString
    at_device: DeviceProto
    def __init__(self, at_int32: _Optional[int] = ..., at_int64: _Optional[int] = ..., at_bool: bool = ..., at_float: _Optional[float] = ..., at_double: _Optional[float] = ..., at_string: _Optional[str] = ..., at_shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., at_data_type: _Optional[_Union[DataType, str]] = ..., at_list_int32: _Optional[_Union[AttrValue.ListInt32, _Mapping]] = ..., at_list_int64: _Optional[_Union[AttrValue.ListInt64, _Mapping]] = ..., at_list_float: _Optional[_Union[AttrValue.ListFloat, _Mapping]] = ..., at_list_data_type: _Optional[_Union[AttrValue.ListDataType, _Mapping]] = ..., at_list_shape: _Optional[_Union[AttrValue.ListShape, _Mapping]] = ..., at_list_string: _Optional[_Union[AttrValue.ListString, _Mapping]] = ..., at_device: _Optional[_Union[DeviceProto, _Mapping]] = ...) -> None: ...
