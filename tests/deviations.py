"""The disagreements with PyTorch kept on purpose, each with its reason (docs/deviations.md says more).

A :class:`Deviation` covers the parity outcomes (tests/parity.py) of some kinds, for some functions (all
when ``names`` is empty), whose text (the outcome's group and detail: the error message of the side that
raised, or the value difference) matches ``pattern``, and, when ``when`` is given, whose call it accepts.
``tests/test_fuzz_ops.py::test_parity`` fails on a disagreement no deviation covers, and
``test_every_kept_deviation_is_documented`` on a deviation without a section (its id in backquotes) in
docs/deviations.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from fuzzing import Call, TensorArg

import oneflow_lite as flow


def _tensors(call: Call):
    for v in [*call.args, *call.kwargs.values()]:
        if isinstance(v, TensorArg):
            yield v
        elif isinstance(v, list):
            yield from (t for t in v if isinstance(t, TensorArg))


def _has_dtype(*dtypes) -> Callable:
    def when(call: Call) -> bool:
        return any(t.dtype in dtypes for t in _tensors(call)) or any(
            v in dtypes for v in [*call.args, *call.kwargs.values()] if isinstance(v, flow.dtype))
    return when


def _not_floating(call: Call) -> bool:
    return any(not t.dtype.is_floating_point for t in _tensors(call)) or any(
        isinstance(v, flow.dtype) and not v.is_floating_point for v in [*call.args, *call.kwargs.values()])


def _on_meta(call: Call) -> bool:
    return any(t.device == "meta" for t in _tensors(call)) or "meta" in [*call.args, *call.kwargs.values()]


def _floats(call: Call):
    for t in _tensors(call):
        if t.dtype.is_floating_point and t.source is not None:
            yield np.asarray(t.source, np.float64)


def _has_nan(call: Call) -> bool:
    return any(np.isnan(a).any() for a in _floats(call))


def _has_extreme(call: Call) -> bool:
    """A finite value whose square (or p-th power) leaves float32's range: above 1e15 or below 1e-15 in size
    (integers included: an int64 or uint64 near its limit)."""
    def extreme(a):
        m = np.abs(a[np.isfinite(a)])
        return bool(((m > 1e15) | ((m > 0) & (m < 1e-15))).any())
    numbers = (np.asarray(t.source, np.float64) for t in _tensors(call)
               if t.source is not None and t.dtype is not flow.bool)
    return any(extreme(a) for a in numbers)


def _has_non_finite(call: Call) -> bool:
    return any(not np.isfinite(a).all() for a in _floats(call))


def _has_duplicate_indices(call: Call) -> bool:
    """An integer tensor after the first (the indices) holding a value twice."""
    later = [t for t in _tensors(call)][1:]
    return any(t.dtype in (flow.int32, flow.int64) and t.source is not None
               and np.unique(np.asarray(t.source)).size < np.asarray(t.source).size for t in later)


def _polygamma_edge(call: Call) -> bool:
    """polygamma of an order past 170, or trigamma of an input holding a pole (0 or a negative integer)."""
    n = call.args[0] if call.args and isinstance(call.args[0], int) else call.kwargs.get("n", 0)
    x = [np.asarray(t.source, np.float64) for t in _tensors(call) if t.source is not None]
    poles = any(((a <= 0) & (a == np.floor(a))).any() for a in x)
    return n > 170 or (n == 1 and poles)


def _extreme_order(call: Call) -> bool:
    """A Python number argument (a norm's order) of size 20 or more, or a positive one below 1e-3: |x|**p leaves
    float32's range for ordinary x."""
    return any(type(v) in (int, float) and (abs(v) >= 20 or 0 < abs(v) < 1e-3)
               for v in [*call.args, *call.kwargs.values()])


def _number_outside_dtype(call: Call) -> bool:
    """A Python int argument outside the range of the first tensor's integer dtype."""
    t = next(iter(_tensors(call)), None)
    if t is None or t.dtype.is_floating_point or t.dtype is flow.bool:
        return False
    info = np.iinfo(t.dtype.np_dtype)
    return any(type(v) is int and not info.min <= v <= info.max for v in [*call.args, *call.kwargs.values()])


def _has_layout(layout) -> Callable:
    return lambda call: any(t.layout == layout for t in _tensors(call))


@dataclass(frozen=True)
class Deviation:
    id: str
    kinds: tuple
    reason: str
    names: tuple = ()
    pattern: str = ""
    when: Callable | None = None

    def covers(self, call: Call, outcome) -> bool:
        if outcome.kind not in self.kinds or (self.names and call.name not in self.names):
            return False
        if self.pattern and not re.search(self.pattern, f"{outcome.group} {outcome.detail}"):
            return False
        return self.when is None or self.when(call)


_LOSSES_AND_NORMS = ("l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "gaussian_nll_loss", "poisson_nll_loss",
                     "hinge_embedding_loss", "soft_margin_loss", "kl_div", "binary_cross_entropy",
                     "binary_cross_entropy_with_logits", "multilabel_soft_margin_loss", "margin_ranking_loss",
                     "cosine_embedding_loss", "triplet_margin_loss", "instance_norm", "batch_norm", "group_norm",
                     "layer_norm", "local_response_norm", "rms_norm", "softmax", "log_softmax", "softmin",
                     "gumbel_softmax", "mish", "bernoulli", "rand_like", "randn_like", "dropout", "dropout1d",
                     "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "feature_dropout",
                     "alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_", "dropout_", "linspace",
                     "logspace", "prelu", "normal", "celu_", "celu", "abs", "adaptive_avg_pool1d",
                     "adaptive_avg_pool2d", "adaptive_avg_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
                     "interpolate", "grid_sample", "affine_grid", "cumsum", "cumprod", "pdist", "normalize")

KNOWN: list[Deviation] = [
    Deviation("bfloat16-storage", ("refusal", "grad refusal", "dtype", "value", "grad"),
              "bfloat16 is a storage dtype here (Note [Storage dtypes]): most ops have no bfloat16 kernel, and "
              "where one computes (in float32, rounding once) its values and promotions may differ from PyTorch's",
              when=_has_dtype(flow.bfloat16)),
    Deviation("integer-inputs", ("refusal",),
              "losses, normalisations, random draws and a few activations compute in floating point only here; "
              "PyTorch also runs some of them on integer or bool tensors (and bool matmul-like ops)",
              pattern=r"OpKernelNotFoundError|floating point|Subtraction, the `-` operator, with a bool|"
                      r"can't be cast|not implemented for|expected a floating",
              when=_not_floating),
    Deviation("meta-kernels", ("refusal",),
              "a few ops have no kernel on the meta device for some dtypes (the meta device follows the cpu "
              "kernels' dtype predicates)",
              pattern=r"OpKernelNotFoundError.*for device 'meta'", when=_on_meta),
    Deviation("expanded-in-place", ("refusal",),
              "every in-place op refuses to write into an expanded tensor (one memory location behind several "
              "elements); PyTorch checks only in its TensorIterator kernels",
              pattern=r"more than one element of the written-to tensor refers to a single memory location"),
    Deviation("in-place-on-leaves", ("refusal", "silent acceptance"),
              "an in-place op on a leaf that requires grad, or on a view of one: oneflow_lite refuses (also for "
              "ops without a gradient, like logical_and_), PyTorch only when the op is differentiable",
              pattern=r"in-place operation on a tensor that shares memory|a view of a leaf Variable|"
                      r"a leaf Variable that requires grad is being used in an in-place operation"),
    Deviation("lenient-signatures", ("silent acceptance",),
              "the functional signatures (OneFlow's functional_api.yaml form) bind forms PyTorch's argument "
              "parser refuses: keepdim without dim, an explicit dim=None, an int for a shape, dim positionally "
              "with stable=, a generator for dropout; the values computed are the same",
              pattern=r"torch: TypeError"),
    Deviation("strict-signatures", ("refusal",),
              "the functional signatures refuse None (or a number) for a Bool argument declared without a None "
              "default, a list for a Float, a bool for a Generator, where PyTorch's Python wrappers let it pass",
              pattern=r"^TypeError: \w+\(\.\.\): argument '\w+' \(\.\.\) must be|^TypeError: .*must be a|"
                      r"^TypeError: \w+\(\.\.\): argument '\w+' must have \w+ elements|"
                      r"^TypeError: \w+\(\.\.\) received an invalid combination of arguments"),
    Deviation("more-dtypes-than-torch", ("silent acceptance", "grad acceptance"),
              "oneflow_lite's kernels run on dtypes PyTorch's CPU kernels do not implement (round on uint8, "
              "rrelu on float16, log_sigmoid on bool, ...)",
              pattern=r"torch: NotImplementedError|not implemented for"),
    Deviation("gradients-torch-refuses", ("silent acceptance", "grad acceptance"),
              "oneflow_lite differentiates where PyTorch refuses: floor_divide and remainder (gradient 0 / 1 "
              "almost everywhere), targets of losses, integer dtype= outputs of prod / cumprod (no gradient), "
              "atan2 of a bool tensor with a float one (PyTorch's backward negates the bool)",
              pattern=r"derivative for .* is not implemented|is not differentiable with respect to|"
                      r"Autograd not support dtype|can't be cast to the desired output type|"
                      r"Negation, the `-` operator, on a bool tensor"),
    Deviation("promotion-torch-refuses", ("silent acceptance", "grad acceptance"),
              "oneflow_lite promotes mixed dtypes (PyTorch's promotion rules) in losses and prelu, where "
              "PyTorch's kernels require equal dtypes",
              pattern=r"Found dtype \w+ but expected|Type promoting not supported|Integral inputs not supported|"
                      r"result type \w+ can't be cast|Subtraction, the `-` operator, with a bool"),
    Deviation("meta-sizes", ("silent acceptance",),
              "a meta tensor holds no storage, so its size is not checked against an addressable storage size",
              pattern=r"Storage size calculation overflowed|numel: integer multiplication overflow", when=_on_meta),
    Deviation("torch-view-in-local-response-norm", ("silent acceptance",),
              "PyTorch's local_response_norm calls view() on its input and fails on non-contiguous tensors; "
              "oneflow_lite computes the same values for any layout (PyTorch is wrong)",
              names=("local_response_norm", "kron", "isin", "take_along_dim"), pattern=r"view size is not compatible"),
    Deviation("gelu-at-infinity", ("value",),
              "gelu(inf) is inf (x * Phi(x) -> x); PyTorch's CPU kernel gives NaN (PyTorch is wrong)",
              names=("gelu",), pattern=r"infinity differs|NaN placement differs"),
    Deviation("layer-norm-overflow", ("value", "grad"),
              "layer_norm / group_norm of float32 rows whose squared deviations overflow: the variance is taken "
              "again in float64, giving the right values; PyTorch gives NaN (PyTorch is wrong)",
              names=("layer_norm", "group_norm"), pattern=r"NaN placement differs"),
    Deviation("nan-hyperparameters", ("value", "grad", "silent acceptance"),
              "an activation or loss given NaN as its own parameter (elu's alpha, a margin, an eps): the "
              "result is NaN here, PyTorch's kernels take one branch or the other",
              pattern=r"NaN placement differs|eps must be non-negative|but found nan",
              when=lambda call: any(isinstance(v, float) and math.isnan(v) for v in [*call.args, *call.kwargs.values()])),
    Deviation("reductions-over-no-dims", ("silent acceptance", "grad"),
              "logsumexp with dim=[] reduces over every dim here (as sum / amax / mean in both); PyTorch 2.13 "
              "raises a broadcasting error from inside its kernel; std / var with dim=[] reduce over every dim in "
              "both, but PyTorch's backward takes [] as no dim and returns inf (PyTorch is wrong)",
              names=("logsumexp", "std", "var"), pattern=r"doesn't match the broadcast shape|infinity differs|"
                                                        r"NaN placement differs",
              when=lambda call: [] in [*call.args, *call.kwargs.values()]),
    Deviation("norm-overflow-in-torch", ("value", "grad"),
              "norms of huge (or, for a negative order, tiny) values: oneflow_lite scales by the largest (smallest) "
              "|x| and gets the finite norm; PyTorch's float32 kernel overflows to inf (0) and its gradient to NaN "
              "or 0, except for one-element inputs (PyTorch is wrong)",
              names=("norm", "pairwise_distance", "pdist", "cdist", "normalize", "cosine_similarity", "dist",
                     "triplet_margin_loss", "triplet_margin_with_distance_loss", "renorm", "lp_pool1d", "lp_pool2d",
                     "lp_pool3d", "clip_grad_norm_", "cosine_embedding_loss"),
              pattern=r"infinity differs|NaN placement differs|differ",
              when=lambda call: _has_extreme(call) or _extreme_order(call)),
    Deviation("relu-gradient-at-nan", ("grad",),
              "relu's gradient at a NaN input is 0 here (relu_grad keeps dy where y > 0, OneFlow's rule, asserted "
              "by tests/test_train_step_ops.py::test_relu_grad_is_dy_where_y_is_positive_else_plus_zero); "
              "PyTorch's threshold_backward passes dy (its mask is y <= 0). lp_pool, built on relu, inherits it",
              names=("relu", "relu_", "lp_pool1d", "lp_pool2d", "lp_pool3d"), pattern=r"NaN placement differs",
              when=lambda call: _has_nan(call)),
    Deviation("nan-gradients-of-reductions", ("grad",),
              "amax / amin of a tensor holding NaN: the gradient goes to the NaN element here, PyTorch spreads "
              "NaN over the slice; prod's gradient through an infinity is exact here, NaN in PyTorch (PyTorch "
              "is wrong in both)",
              names=("amax", "amin", "prod", "max", "min"), pattern=r"NaN placement differs|differ"),
    Deviation("clamp-gradient-at-nan", ("grad",),
              "clamp / clip with number bounds pass the gradient at a NaN input (1 here, 0 in PyTorch 2.13); kept "
              "because tests/test_ops_unary.py::test_clamp_and_hardtanh_gradients_at_the_bounds asserts it (a "
              "NaN bound gives 0, as PyTorch)",
              names=("clamp", "clip", "clamp_", "clip_", "margin_ranking_loss", "hinge_embedding_loss",
                     "triplet_margin_loss", "cosine_embedding_loss", "cosine_similarity", "normalize",
                     "pairwise_distance"), when=lambda call: any(
                  t.dtype.is_floating_point and bool(np.isnan(t.source.astype(np.float64)).any())
                  for t in _tensors(call))),
    Deviation("roll-of-0-d", ("silent acceptance",),
              "roll(x, shifts, dims) of a 0-d tensor leaves it in place; PyTorch refuses any dims (kept: "
              "tests/test_ops_shape_ext.py asserts it)",
              names=("roll",), pattern=r"Dimension specified as|no dimensions"),
    Deviation("sampling-edge-cases", ("refusal", "silent acceptance", "dtype"),
              "gumbel_softmax(hard=True) of a 0-d tensor, randint_like / rand_like argument checks, alpha dropout "
              "of integer tensors (a float result here): edge cases of random functions whose values are not "
              "compared",
              names=("gumbel_softmax", "randint_like", "rand_like", "randn_like", "randint", "normal", "bernoulli",
                     "poisson", "multinomial", "rrelu", "rrelu_", "alpha_dropout", "alpha_dropout_",
                     "feature_alpha_dropout", "feature_alpha_dropout_", "binomial", "native_dropout")),
    Deviation("meta-checks", ("refusal",),
              "value checks (a fill value that overflows the dtype, bucketize's 1-d boundaries, select_scatter's "
              "index, index_put's and cross's dtypes) run on meta "
              "tensors too; PyTorch's meta functions skip them",
              pattern=r"without overflow|to have non-zero size|boundaries tensor must be|index \w+ out of range|"
                      r"source and destination dtypes match|expected input and other to have the same dtype",
              when=_on_meta),
    Deviation("integer-masks", ("silent acceptance",),
              "OneFlow's masked_select / masked_fill / where take an integer mask or condition (nonzero is "
              "True, Note [Integer masks]); PyTorch wants a bool one",
              names=("masked_select", "masked_fill", "masked_fill_", "masked_scatter", "masked_scatter_", "where"),
              pattern=r"expected BoolTensor for mask|expected condition to be a boolean tensor|"
                      r"only supports boolean masks|expected mask dtype to be Bool"),
    Deviation("no-sparse-tensors", ("refusal",),
              "there are no sparse tensors: gather(sparse_grad=True) refuses, saying so",
              names=("gather",), pattern=r"sparse_grad=True is not supported"),
    Deviation("low-precision-linalg", ("refusal",),
              "the linear-algebra functions refuse float16 / bfloat16, as PyTorch's LAPACK-backed ones; "
              "PyTorch's lu_unpack, which only copies, takes them, so does its matrix_exp (a series of "
              "products) and det of an empty matrix",
              names=("lu_unpack", "matrix_exp", "linalg_matrix_exp", "det", "linalg_det"),
              pattern=r"Low precision dtypes not supported"),
    Deviation("torch-skips-checks-on-empty", ("refusal", "silent acceptance"),
              "PyTorch's deprecated cholesky returns an empty input before checking that it is square (or a "
              "matrix); its cummax / cummin of an empty input before checking dim; matmul, searchsorted and "
              "isin of empty tensors before checking dtypes; svd of an empty float16 tensor",
              names=("cholesky", "cummax", "cummin", "tile", "matmul", "searchsorted", "isin", "svd", "linalg_svd",
                     "svdvals", "index_put", "index_put_"),
              pattern=r"must be batches of square matrices|Dimension out of|negative dimension|"
                      r"must have at least \w+ dimensions|to have the same dtype|"
                      r"Promotion for uint\w*, uint\w*, uint\w* types|Low precision dtypes not supported|"
                      r"is out of bounds for dimension",
              when=lambda call: any(0 in t.shape for t in _tensors(call))),
    Deviation("negative-padding-modes", ("refusal",),
              "pad with a negative padding (a crop) in reflect / replicate / circular mode refuses here, with "
              "a message saying only constant mode crops; PyTorch crops in every mode",
              names=("pad",), pattern=r"negative padding .* is only supported in constant mode"),
    Deviation("hardtanh-bounds", ("refusal",),
              "hardtanh_ checks min_val <= max_val as hardtanh does; PyTorch's in-place variant does not check",
              names=("hardtanh_",), pattern=r"min_val cannot be greater than max_val"),
    Deviation("degenerate-backward", ("grad acceptance",),
              "backward through an empty output (adaptive pooling to size 0) gives empty gradients here; "
              "PyTorch's backward kernel refuses",
              pattern=r"non-zero size"),
    Deviation("broadcasting-losses", ("silent acceptance",),
              "elementwise losses broadcast input and target (with PyTorch's warning); PyTorch's kernels for "
              "some of them (soft_margin_loss) allocate the output like the input and refuse",
              names=("soft_margin_loss", "l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "kl_div"),
              pattern=r"doesn't match the broadcast shape"),
    Deviation("signed-zero-clamp", ("value", "grad"),
              "clamp(-0.0, min=0.0) is +0.0 here and -0.0 in PyTorch (std::max keeps its first argument); a "
              "division by the clamped value then gives +inf here, -inf there (gaussian_nll_loss with var -0.0)",
              names=("gaussian_nll_loss",), pattern=r"NaN placement differs|infinity differs"),
    Deviation("torch-empty-dropout-mask", ("dtype",),
              "native_dropout(train=False) of an empty tensor: PyTorch's mask takes the input's dtype (a bool "
              "mask otherwise); the mask is bool here in every case (PyTorch is inconsistent)",
              names=("native_dropout",), pattern=r"output 1: flow bool"),
    Deviation("torch-welford-mean-of-inf", ("value",),
              "var_mean / std_mean of a slice holding an infinity: the mean is that infinity here (a sum); "
              "PyTorch's one-pass Welford update gives NaN (PyTorch is wrong: mean([-inf, 1]) is -inf)",
              names=("var_mean", "std_mean"), pattern=r"NaN placement differs|infinity differs"),
    Deviation("torch-integer-trapezoid", ("value", "dtype"),
              "trapezoid / cumulative_trapezoid of integer samples: the differences and sums are taken in "
              "floating point here; PyTorch takes them in the integer dtype, wrapping around (uint8 3 - 8 is 251)",
              names=("trapezoid", "cumulative_trapezoid", "trapz"), when=_not_floating),
    Deviation("torch-0d-trapezoid-x", ("refusal",),
              "trapezoid / cumulative_trapezoid with a 0-d x refuse here (x has no spacing to take); PyTorch "
              "returns zeros (an empty tensor for cumulative_trapezoid) (PyTorch is wrong)",
              names=("trapezoid", "cumulative_trapezoid", "trapz"), pattern=r"at least one-dimensional"),
    Deviation("torch-take-along-dim-bounds", ("refusal",),
              "take_along_dim with an index past the dim refuses here (gather's bounds check); PyTorch's "
              "take_along_dim returns without checking (PyTorch is wrong: the values are read out of bounds)",
              names=("take_along_dim",), pattern=r"is out of bounds for dimension"),
    Deviation("torch-inf-grads", ("grad",),
              "soft_margin_loss's gradient at an infinite input is finite here (-y / N * sigmoid(-y x), the "
              "limit); PyTorch computes exp(inf) / (1 + exp(inf)) and gets NaN; copysign's gradient at an "
              "infinite input is ±1 here (0 at NaN, as abs's in both), NaN there (result / input) (PyTorch is "
              "wrong)",
              names=("soft_margin_loss", "copysign"), pattern=r"NaN placement differs"),
    Deviation("torch-integer-overflow-in-grads", ("grad",),
              "atan2's gradient with an integer other: computed in floating point here; PyTorch squares the "
              "integer tensor in its own dtype (int16 32767**2 wraps) (PyTorch is wrong)",
              names=("atan2", "arctan2"), when=_not_floating),
    Deviation("torch-empty-histogramdd", ("value",),
              "histogramdd of points with no coordinate (input (N, 0), bins []): one bin holding all N points "
              "here; PyTorch returns 0 (PyTorch is wrong)",
              names=("histogramdd",), when=lambda call: any(t.shape and t.shape[-1] == 0 for t in _tensors(call))),
    Deviation("torch-mixes-meta", ("refusal",),
              "an op given a cpu and a meta tensor refuses here (two devices); PyTorch lets a 0-d cpu tensor "
              "join tensors of another device (as a number), its cross returns a cpu tensor for that mix, and an "
              "in-place add of a meta uint32 to a cpu uint64 skips the promotion check it makes between cpu tensors",
              pattern=r"expected all tensors to be on the same device|Promotion for uint\w*, uint\w*, uint\w* types",
              when=_on_meta),
    Deviation("torch-unique-consecutive-expanded", ("value",),
              "unique_consecutive(return_inverse=True, dim=d) of an expanded tensor: PyTorch's inverse indices "
              "are off (1 for the only slice of a size-1 dim); here they count the runs (PyTorch is wrong)",
              names=("unique_consecutive",),
              when=lambda call: any(t.layout == "expanded" for t in _tensors(call))),
    Deviation("torch-0d-full-overflow", ("refusal",),
              "full / scalar_tensor of a 0-d float16 with a value beyond its range: refused here as full of any "
              "other shape is in both; PyTorch's 0-d path gives inf (PyTorch is inconsistent)",
              names=("full", "scalar_tensor"), pattern=r"cannot be converted to type float"),
    Deviation("unsorted-topk-order", ("value",),
              "topk(sorted=False): the k values are the same set; their order is unspecified in both and differs",
              names=("topk",), when=lambda call: call.kwargs.get("sorted", call.args[4] if len(call.args) > 4
                                                                      else True) is False),
    Deviation("torch-empty-pixel-unshuffle", ("shape", "grad acceptance"),
              "pixel_unshuffle of an empty tensor: the output shape here follows the formula (C * r * r, H / r, "
              "W / r); PyTorch returns the input's shape, and pixel_shuffle's backward of an empty tensor fails "
              "there (PyTorch is wrong)",
              names=("pixel_unshuffle", "pixel_shuffle"), when=lambda call: any(0 in t.shape for t in _tensors(call))),
    Deviation("torch-vander-backward", ("grad acceptance",),
              "vander with increasing=True differentiates here; PyTorch's backward fails, its forward having "
              "modified a saved tensor in place (PyTorch is wrong)",
              names=("vander",), pattern=r"modified by an inplace operation"),
    Deviation("torch-less-precise", ("value", "grad"),
              "float16 arithmetic here runs in float32 and rounds once (Note [Scalar operands]); PyTorch rounds "
              "some intermediates to float16 (pow's exponent - 1 in its gradient, a Python scalar base of pow, "
              "layer_norm's mean with a tiny eps, soft_margin_loss's exp, atan2's gradient and cosine_similarity's "
              "norms of a float16 operand), so its results are further from the "
              "exact ones (PyTorch is less precise)",
              names=("pow", "layer_norm", "float_power", "soft_margin_loss", "atan2", "cosine_similarity", "sinc"),
              when=_has_dtype(flow.float16, flow.bfloat16)),
    Deviation("float-to-unsigned", ("value",),
              "floats outside an integer dtype's range converted to it (negative floats to uint8 by linspace / "
              "logspace / arange, 1e30 to int32 by logspace or by nansum's dtype=) differ: in C++ the conversion is "
              "undefined and PyTorch's result depends on the platform (x86: INT_MIN); here NumPy's",
              names=("linspace", "logspace", "arange", "range", "nansum", "sum", "cumsum", "prod", "cumprod"),
              when=lambda call: _has_dtype(flow.uint8)(call) or (
                  isinstance(call.kwargs.get("dtype"), flow.dtype) and not call.kwargs["dtype"].is_floating_point
                  and (_has_extreme(call) or _has_non_finite(call)
                       or any(isinstance(v, float) and abs(v) > 1e9 for v in call.args)))),
    Deviation("index-dtypes", ("refusal",),
              "gather / scatter take int64 indices only (PyTorch also int32 for some of them)",
              names=("gather", "scatter", "scatter_add", "index_add", "index_select"),
              pattern=r"Expected dtype int\w* for index|dim_scatter|dim_gather|Index tensor must have"),
    Deviation("torch-skips-index-dtype-on-empty", ("refusal",),
              "take_along_dim with empty bool indices: PyTorch returns an empty result without checking the "
              "indices' dtype; oneflow_lite checks it first",
              names=("take_along_dim",), pattern=r"dtype of indices should be",
              when=lambda call: any(0 in t.shape for t in _tensors(call))),
    Deviation("negative-bounds-of-unsigned", ("refusal",),
              "clamp / clip / fill_ / full of an unsigned tensor with a negative number refuses here (it is not a uint "
              "value); PyTorch's conversion check lets negative values down to -2**bits through and wraps them "
              "(clamp_max_(uint8 8, -129) clamps to 127, fill_(uint16, -2) writes 65534)",
              names=("clamp", "clamp_", "clip", "clip_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_",
                     "fill_", "scalar_tensor", "full", "full_like", "new_full", "constant_pad_nd", "fill",
                     "fill_diagonal_"),
              pattern=r"cannot be converted to type uint\w* without overflow"),
    Deviation("unsigned-promotion", ("silent acceptance",),
              "vander of a uint16 / uint32 / uint64 vector computes its powers after a cast to int64 here, isin "
              "compares a Python int with a uint32 tensor by value; PyTorch promotes with int64 and refuses (no "
              "promotion rules for these dtypes)",
              names=("vander", "isin"), pattern=r"Promotion for uint\w*, uint\w*, uint\w* types is not supported"),
    Deviation("detach-of-views", ("silent acceptance",),
              "detach_() of a view detaches it here (tensors record no view / base relation, only a shared "
              "version counter); PyTorch refuses to detach a view in place",
              names=("detach_",), pattern=r"Can't detach views in-place"),
    Deviation("torch-positional-return-inverse", ("shape", "value"),
              "unique_consecutive(x, True): the inverse indices have x's shape here; PyTorch's Python wrapper "
              "returns an empty (or wrong) inverse when return_inverse is given positionally (PyTorch is wrong: "
              "return_inverse=True by keyword gives x's shape there too)",
              names=("unique_consecutive",), pattern=r"output 1"),
    Deviation("squares-overflow-in-torch", ("value", "grad"),
              "rms_norm / local_response_norm / corrcoef of float32 values whose squares overflow (1e30): "
              "oneflow_lite takes the norm scaled by the largest |x| (rms_norm), squares again in float64 "
              "(local_response_norm) or divides each row by its largest |x| (corrcoef) and gets the finite result; "
              "PyTorch's float32 kernels overflow to inf and give 0 or NaN (PyTorch is wrong)",
              names=("rms_norm", "local_response_norm", "corrcoef"),
              pattern=r"infinity differs|NaN placement differs|differ", when=lambda call: _has_extreme(call)),
    Deviation("svd-of-non-finite", ("refusal",),
              "SVD-based functions refuse a matrix holding Inf or NaN with a LinAlgError saying so "
              "(OpenBLAS's gesdd loops forever on them); PyTorch's CPU kernels return NaN",
              pattern=r"contained non-finite values"),
    Deviation("zero-kernel-unpool", ("refusal",),
              "max_unpool with kernel_size 0 refuses here (a window of no element); PyTorch returns an empty output",
              names=("max_unpool1d", "max_unpool2d", "max_unpool3d"),
              pattern=r"kernel_size and stride must be greater than zero"),
    Deviation("linalg-gradients-at-extremes", ("grad",),
              "gradients of det / logdet / slogdet / cholesky_inverse of a matrix holding ±Inf or values near the "
              "dtype's limits: they hold inf - inf or inf * 0, NaN or ±inf in positions that depend on the "
              "pivoting and the order of operations (here NumPy's, there LAPACK's)",
              names=("det", "linalg_det", "logdet", "slogdet", "linalg_slogdet", "cholesky_inverse"),
              when=lambda call: _has_non_finite(call) or _has_extreme(call)),
    Deviation("torch-median-of-expanded", ("value",),
              "median / nanmedian along a dim of an expanded tensor (stride 0): PyTorch's values are wrong (it "
              "reads memory past the expanded row: 3.7e-42 for a row of 9.0); here they are the medians (PyTorch "
              "is wrong)",
              names=("median", "nanmedian"), when=_has_layout("expanded")),
    Deviation("torch-gcd-of-minimum", ("value",),
              "gcd with the most negative integer of the dtype (-32768 in int16): gcd(-32768, 7) is 1 here; "
              "PyTorch negates a value that does not fit and returns -1 (PyTorch is wrong)",
              names=("gcd", "gcd_"), when=_not_floating),
    Deviation("torch-mode-of-nan", ("value",),
              "mode of a row holding NaN: here NaNs count as equal values (as sort orders them together), so "
              "mode([nan, 1, nan, 1, 2]) is 1 at index 3 (the smallest of the most frequent); PyTorch's result "
              "depends on where its sort leaves the NaNs (nan at index 0 there) (PyTorch is wrong)",
              names=("mode",), when=_has_nan),
    Deviation("torch-integer-statistics", ("value",),
              "cov / corrcoef of integers near their dtype's limits: PyTorch sums int64 in int64 (the mean of "
              "[-4, -3, -2**63] wraps) and squares float32; here deviations are taken in float64 (cov 2.84e37, "
              "PyTorch 8.51e37) (PyTorch is wrong)",
              names=("cov", "corrcoef"), when=lambda call: _not_floating(call) and _has_extreme(call)),
    Deviation("duplicate-indices", ("value",),
              "put / index_put / index_copy / scatter without accumulation writing one position twice: here "
              "the last write wins, in index order; PyTorch leaves the winner undefined (its order follows its "
              "iterator over the index's layout: the first of three writes for an expanded index)",
              names=("put", "put_", "index_put", "index_put_", "index_copy", "index_copy_", "scatter", "scatter_"),
              when=_has_duplicate_indices),
    Deviation("torch-lu-unpack-pivots", ("refusal",),
              "lu_unpack with pivots whose shape is not LU's batch shape + [min(m, n)] refuses here; PyTorch "
              "reads what it finds (a longer vector's first entries, a batch of pivots for one matrix, or memory "
              "past the tensor: 'index 140379611405536 is out of bounds') (PyTorch is wrong)",
              names=("lu_unpack",), pattern=r"LU_pivots must have shape"),
    Deviation("torch-std-mean-gradient-at-zero", ("grad",),
              "std_mean / var_mean of equal values: the gradient of the standard deviation at 0 is 0 here, as "
              "std's is in both (and norm's); PyTorch's std_mean gives NaN there (0 / 0) (PyTorch is inconsistent)",
              names=("std_mean",), pattern=r"NaN placement differs"),
    Deviation("svd-signs", ("value", "grad"),
              "singular vectors are unique up to sign (a pair u, v may both flip): for a non-contiguous input "
              "LAPACK sees another memory order here than in PyTorch and may return the other sign; the singular "
              "values agree",
              names=("svd", "linalg_svd"), pattern=r"output [02]|input"),
    Deviation("assume-unique", ("value",),
              "isin(..., assume_unique=True) of inputs holding duplicates: the result is exact here; PyTorch's "
              "(as NumPy's) is undefined for them",
              names=("isin",), when=lambda call: bool(call.kwargs.get("assume_unique"))
              or (len(call.args) > 2 and call.args[2] is True)),
    Deviation("torch-polygamma-edges", ("value",),
              "polygamma of an order whose factorial overflows float64 (n > 170) is computed in log space here "
              "(polygamma(200, 100.) = -9.1e-28, PyTorch NaN; polygamma(170, 100.) = -8.9e-36, PyTorch -0.0), and "
              "trigamma at its poles (0, -1, -2, ...) is inf here, finite there (1.3e15 in float32: sin(pi x) does "
              "not round to 0) (PyTorch is wrong)",
              names=("polygamma", "special_polygamma"), when=_polygamma_edge),
    Deviation("slogdet-sign-of-nan", ("value",),
              "slogdet of a matrix whose determinant is NaN (an Inf making inf - inf): the sign is NumPy's (1) "
              "here, 0 in PyTorch; the log-determinant is NaN in both",
              names=("slogdet", "linalg_slogdet"), when=lambda call: _has_non_finite(call)),
    Deviation("rnn-cell-shapes", ("refusal",),
              "rnn_tanh_cell / rnn_relu_cell / lstm_cell / gru_cell check that input and hidden states have "
              "matching ranks (1-D or 2-D) here; PyTorch's cells let a 3-D state broadcast through their matmuls",
              names=("rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"), pattern=r"expected a \w+-D input"),
    Deviation("torch-trapezoid-single-sample", ("value", "grad"),
              "trapezoid over a dim of one sample is 0 here (an empty sum, whatever the sample); PyTorch computes "
              "(sum - (first + last) / 2) * dx, which is inf - inf = NaN for an infinite or NaN sample (PyTorch "
              "is wrong)",
              names=("trapezoid", "trapz"), pattern=r"NaN placement differs|infinity differs",
              when=_has_non_finite),
    Deviation("fake-quantize-tensor-qparams", ("refusal",),
              "fake_quantize_per_tensor_affine with tensor scale / zero_point checks that the zero point lies in "
              "[quant_min, quant_max] here, as both do for numbers; PyTorch's tensor overload skips the check",
              names=("fake_quantize_per_tensor_affine",), pattern=r"`zero_point` must be between"),
    Deviation("histogram-of-extremes", ("value",),
              "histogram / histc of values spanning ±1e30: the bin of an ordinary value is decided by rounding "
              "(x - lo) / width at 1e28 per bin; here NumPy's order of operations, PyTorch's differs (15 values in "
              "bin 49 there, 34 here)",
              names=("histogram", "histc", "histogramdd"), when=_has_extreme),
    Deviation("linalg-of-non-finite", ("value",),
              "cholesky_solve / solve_triangular / lu_solve of matrices holding ±Inf, NaN or 1e30: the solution "
              "holds inf - inf or 0 * inf, NaN or ±inf in positions that depend on the order of the substitution "
              "(NumPy's here, the BLAS's in PyTorch)",
              names=("cholesky_solve", "solve_triangular", "triangular_solve", "lu_solve", "linalg_lu_solve"),
              pattern=r"NaN placement differs|infinity differs",
              when=lambda call: _has_non_finite(call) or _has_extreme(call)),
    Deviation("torch-isin-wraps-scalar", ("value",),
              "isin(elements, number) with a number outside the elements' dtype: here it is compared by value "
              "(no int8 element equals -2**63 or 383); PyTorch converts it to the dtype first, wrapping (383 "
              "matches 127, -2**63 matches 0) (PyTorch is wrong)",
              names=("isin",), when=lambda call: _number_outside_dtype(call)),
    Deviation("resize-fills-zeros", ("value",),
              "resize_ / resize_as_ growing a tensor: the new elements are zeros here; PyTorch leaves them "
              "uninitialised (whatever the memory held)",
              names=("resize_", "resize_as_")),
    Deviation("torch-one-step-logspace", ("silent acceptance",),
              "logspace with steps=1 into an integer dtype: PyTorch fills it through a checked scalar conversion "
              "and refuses base**start beyond the dtype (10**3 for int8); here it is converted as for more steps",
              names=("logspace",), pattern=r"cannot be converted to type \w+ without overflow"),
    Deviation("hash-tensor-modes", ("refusal",),
              "hash_tensor refuses a mode it does not know (0 is the only one, xor-sum of the bits); PyTorch 2.13 "
              "takes any integer",
              names=("hash_tensor",), pattern=r"Unknown hash_tensor mode"),
    Deviation("torch-heaviside-view", ("grad refusal",),
              "heaviside_ of a view with values requiring grad: heaviside has no derivative in either; the "
              "backward raises here, as PyTorch's does for a tensor that is not a view; for a view PyTorch "
              "replaces the grad_fn by the view's and returns None for values (PyTorch is wrong)",
              names=("heaviside", "heaviside_"), pattern=r"derivative for 'heaviside' is not implemented"),
    Deviation("torch-half-alpha", ("value", "grad"),
              "add / sub of float16 tensors with an alpha below float16's range: here alpha stays a float32 "
              "scalar (Note [Scalar operands]); PyTorch rounds it to float16 first (-1.4e-11 becomes -0.0, and "
              "-0.0 * -inf is NaN where the exact result is -inf) (PyTorch is less precise)",
              names=("add", "sub", "subtract"),
              when=lambda call: _has_dtype(flow.float16, flow.bfloat16)(call)
              and 0 < abs(call.kwargs.get("alpha", 1) or 1) < 6e-8),
]


def known(call: Call, outcome) -> Deviation | None:
    """The kept deviation covering ``outcome`` of ``call``, or None."""
    for d in KNOWN:
        if d.covers(call, outcome):
            return d
    return None
