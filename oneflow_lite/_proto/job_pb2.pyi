from . import attr_value_pb2 as _attr_value_pb2
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

class SplitParallel(_message.Message):
    __slots__ = ("axis",)
    AXIS_FIELD_NUMBER: _ClassVar[int]
    axis: int
    def __init__(self, axis: _Optional[int] = ...) -> None: ...

class BroadcastParallel(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PartialSumParallel(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PartialMaxParallel(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PartialMinParallel(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SbpParallel(_message.Message):
    __slots__ = ("split_parallel", "broadcast_parallel", "partial_sum_parallel", "partial_max_parallel", "partial_min_parallel")
    SPLIT_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    BROADCAST_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_SUM_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_MAX_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_MIN_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    split_parallel: SplitParallel
    broadcast_parallel: BroadcastParallel
    partial_sum_parallel: PartialSumParallel
    partial_max_parallel: PartialMaxParallel
    partial_min_parallel: PartialMinParallel
    def __init__(self, split_parallel: _Optional[_Union[SplitParallel, _Mapping]] = ..., broadcast_parallel: _Optional[_Union[BroadcastParallel, _Mapping]] = ..., partial_sum_parallel: _Optional[_Union[PartialSumParallel, _Mapping]] = ..., partial_max_parallel: _Optional[_Union[PartialMaxParallel, _Mapping]] = ..., partial_min_parallel: _Optional[_Union[PartialMinParallel, _Mapping]] = ...) -> None: ...

class NdSbp(_message.Message):
    __slots__ = ("sbp_parallel",)
    SBP_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    sbp_parallel: _containers.RepeatedCompositeFieldContainer[SbpParallel]
    def __init__(self, sbp_parallel: _Optional[_Iterable[_Union[SbpParallel, _Mapping]]] = ...) -> None: ...

class NdSbpSignature(_message.Message):
    __slots__ = ("bn_in_op2nd_sbp",)
    class BnInOp2ndSbpEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: NdSbp
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[NdSbp, _Mapping]] = ...) -> None: ...
    BN_IN_OP2ND_SBP_FIELD_NUMBER: _ClassVar[int]
    bn_in_op2nd_sbp: _containers.MessageMap[str, NdSbp]
    def __init__(self, bn_in_op2nd_sbp: _Optional[_Mapping[str, NdSbp]] = ...) -> None: ...

class JobParallelViewConf(_message.Message):
    __slots__ = ("op_name2nd_sbp_signature_conf",)
    class OpName2ndSbpSignatureConfEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: NdSbpSignature
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[NdSbpSignature, _Mapping]] = ...) -> None: ...
    OP_NAME2ND_SBP_SIGNATURE_CONF_FIELD_NUMBER: _ClassVar[int]
    op_name2nd_sbp_signature_conf: _containers.MessageMap[str, NdSbpSignature]
    def __init__(self, op_name2nd_sbp_signature_conf: _Optional[_Mapping[str, NdSbpSignature]] = ...) -> None: ...

class ParallelConf(_message.Message):
    __slots__ = ("device_tag", "ranks", "hierarchy")
    DEVICE_TAG_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    HIERARCHY_FIELD_NUMBER: _ClassVar[int]
    device_tag: str
    ranks: _containers.RepeatedScalarFieldContainer[int]
    hierarchy: _attr_value_pb2.ShapeProto
    def __init__(self, device_tag: _Optional[str] = ..., ranks: _Optional[_Iterable[int]] = ..., hierarchy: _Optional[_Union[_attr_value_pb2.ShapeProto, _Mapping]] = ...) -> None: ...

class OpNameSet(_message.Message):
    __slots__ = ("op_name",)
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    op_name: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, op_name: _Optional[_Iterable[str]] = ...) -> None: ...

class PlacementGroup(_message.Message):
    __slots__ = ("op_set", "parallel_conf")
    OP_SET_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_CONF_FIELD_NUMBER: _ClassVar[int]
    op_set: OpNameSet
    parallel_conf: ParallelConf
    def __init__(self, op_set: _Optional[_Union[OpNameSet, _Mapping]] = ..., parallel_conf: _Optional[_Union[ParallelConf, _Mapping]] = ...) -> None: ...

class Placement(_message.Message):
    __slots__ = ("placement_group",)
    PLACEMENT_GROUP_FIELD_NUMBER: _ClassVar[int]
    placement_group: _containers.RepeatedCompositeFieldContainer[PlacementGroup]
    def __init__(self, placement_group: _Optional[_Iterable[_Union[PlacementGroup, _Mapping]]] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("job_conf", "net", "placement", "job_parallel_view_conf")
    JOB_CONF_FIELD_NUMBER: _ClassVar[int]
    NET_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    JOB_PARALLEL_VIEW_CONF_FIELD_NUMBER: _ClassVar[int]
    job_conf: JobConfigProto
    net: DLNetConf
    placement: Placement
    job_parallel_view_conf: JobParallelViewConf
    def __init__(self, job_conf: _Optional[_Union[JobConfigProto, _Mapping]] = ..., net: _Optional[_Union[DLNetConf, _Mapping]] = ..., placement: _Optional[_Union[Placement, _Mapping]] = ..., job_parallel_view_conf: _Optional[_Union[JobParallelViewConf, _Mapping]] = ...) -> None: ...
