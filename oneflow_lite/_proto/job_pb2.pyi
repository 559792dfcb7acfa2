from . import op_conf_pb2 as _op_conf_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TrainConf(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PredictConf(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class JobConfigProto(_message.Message):
    __slots__ = ("job_name", "train_conf", "predict_conf")
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    TRAIN_CONF_FIELD_NUMBER: _ClassVar[int]
    PREDICT_CONF_FIELD_NUMBER: _ClassVar[int]
    job_name: str
    train_conf: TrainConf
    predict_conf: PredictConf
    def __init__(self, job_name: _Optional[str] = ..., train_conf: _Optional[_Union[TrainConf, _Mapping]] = ..., predict_conf: _Optional[_Union[PredictConf, _Mapping]] = ...) -> None: ...

class DLNetConf(_message.Message):
    __slots__ = ("op",)
    OP_FIELD_NUMBER: _ClassVar[int]
    op: _containers.RepeatedCompositeFieldContainer[_op_conf_pb2.OperatorConf]
    def __init__(self, op: _Optional[_Iterable[_Union[_op_conf_pb2.OperatorConf, _Mapping]]] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("job_conf", "net")
    JOB_CONF_FIELD_NUMBER: _ClassVar[int]
    NET_FIELD_NUMBER: _ClassVar[int]
    job_conf: JobConfigProto
    net: DLNetConf
    def __init__(self, job_conf: _Optional[_Union[JobConfigProto, _Mapping]] = ..., net: _Optional[_Union[DLNetConf, _Mapping]] = ...) -> None: ...
