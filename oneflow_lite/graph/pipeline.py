"""The job passes a graph's compilation runs, in order, as its config says (graph/config.py)."""

from __future__ import annotations

from oneflow_lite.graph.checkpointing import activation_checkpointing, outermost
from oneflow_lite.graph.fusions import fuse_add_to_output, fuse_cast_scale, fuse_model_update_ops
from oneflow_lite.graph.ir import JobIR
from oneflow_lite.graph.kernel_fusion import fuse_elementwise_kernels
from oneflow_lite.graph.passes import (common_subexpression_elimination, constant_folding, dead_code_elimination,
                                      save_gelu_derivatives)
from oneflow_lite.graph.xent_fusion import fuse_softmax_cross_entropy


def checkpoint_segments(job, calls: list, graph_modules: dict) -> list:
    """``(op names, result blobs)`` of the outermost calls of modules marked for activation checkpointing."""
    marked = [c for c in calls if getattr(graph_modules.get(c.path), "activation_checkpointing", None)]
    ops = job.net.op
    return [({ops[i].name for i in range(c.start, c.end)}, c.out_lbns) for c in outermost(marked)]


def run_job_passes(ir: JobIR, variables: dict, config, segments: list) -> list:
    """Rewrite ``ir`` by the passes ``config`` enables: CSE, constant folding, dead-code elimination, OneFlow's
    fusions, then activation checkpointing (after them: CSE would merge its copies back), then the GELU derivative
    fusion, the fused softmax cross-entropy and the fused elementwise kernels (last: they take whole regions of the
    others' ops). Their reports."""
    reports = []
    if config.is_enabled("cse"):
        reports.append(common_subexpression_elimination(ir))
    if config.is_enabled("constant_folding"):
        reports.append(constant_folding(ir, variables))
    if config.is_enabled("dce"):
        reports.append(dead_code_elimination(ir))
    if config.is_enabled("fuse_model_update_ops"):
        reports.append(fuse_model_update_ops(ir))
    if config.is_enabled("fuse_cast_scale"):
        reports.append(fuse_cast_scale(ir))
    if config.is_enabled("fuse_add_to_output"):
        reports.append(fuse_add_to_output(ir))
    if segments:
        reports.append(activation_checkpointing(ir, segments))
    if config.is_enabled("fusion"):  # after checkpointing: a recomputed x is not the forward gelu's input
        reports.append(save_gelu_derivatives(ir))  # Note [Derivatives in the forward]
    if config.is_enabled("fuse_softmax_cross_entropy"):
        reports.append(fuse_softmax_cross_entropy(ir))  # Note [Fused softmax cross-entropy]
    if config.is_enabled("fuse_elementwise_kernels"):
        reports.append(fuse_elementwise_kernels(ir))  # Note [Fused elementwise kernels]
    return reports
