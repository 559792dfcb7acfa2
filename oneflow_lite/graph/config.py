"""``graph.config``: the options of one ``nn.Graph`` (OneFlow's ``GraphConfig``).

Three kinds of option, each changed by a method of OneFlow's name:

- the compiler's own passes (``enable_cse``, ``enable_constant_folding``, ``enable_dce``, ``enable_fusion``,
  ``enable_memory_plan``; all on by default): changing one drops the compiled plans and the next call
  compiles the captured jobs again;
- fusion switches (OneFlow's ``allow_fuse_add_to_output``, ``allow_fuse_model_update_ops``,
  ``allow_fuse_cast_scale``, and ``allow_fuse_elementwise_kernels``, ``allow_fuse_softmax_cross_entropy``; off by
  default, as in OneFlow): job passes (graph/fusions.py, graph/kernel_fusion.py, graph/xent_fusion.py), also applied
  at the next compilation;
- capture options (``set_gradient_accumulation_steps``, ``enable_amp``): they change what ``build()`` is
  captured into, so changing one drops the captured jobs and the next call captures again.

Note [Capture options]
An option that changes the capture (gradient accumulation, AMP's ``enable_amp``, the fused model update with a
grad scaler; the graph's grad scaler,
``nn.Graph.set_grad_scaler``, acts the same way) is a field of ``capture_options()``, which the graph reads
when it captures; the graph keys nothing else on it, because changing an option drops every captured job
(``on_recapture``).
"""

from __future__ import annotations

from oneflow_lite.framework import dtype as dtypes


class GraphConfig:
    """The options of one graph (see the module docstring). ``repr`` lists them all."""

    PASSES = ("cse", "constant_folding", "dce", "fusion", "memory_plan")
    FUSIONS = ("fuse_add_to_output", "fuse_model_update_ops", "fuse_cast_scale", "fuse_elementwise_kernels",
               "fuse_softmax_cross_entropy")

    def __init__(self, on_change=None, on_recapture=None):
        self._flags = dict.fromkeys(self.PASSES, True)
        self._flags.update(dict.fromkeys(self.FUSIONS, False))
        self._on_change = on_change
        self._on_recapture = on_recapture
        self._grad_acc_steps = 1
        self._amp_dtype = None  # the autocast dtype of build() with enable_amp, else None
        self._training = False
        self._cudnn_conv_heuristic = True

    def _set(self, name, mode, what=None, also=None):
        """Set flag ``name``; when it changes, call ``on_change`` (and ``also``, e.g. ``on_recapture``)."""
        if not isinstance(mode, bool):
            raise TypeError(f"GraphConfig.{what or 'enable_' + name}(): mode must be a bool, got {type(mode).__name__}")
        if self._flags[name] != mode:
            self._flags[name] = mode
            for callback in (self._on_change, also):
                if callback is not None:
                    callback()

    # ---- the compiler's passes ------------------------------------------------------------------
    def enable_cse(self, mode: bool = True) -> None:
        """Common-subexpression elimination: merge ops of the same type, attrs and inputs."""
        self._set("cse", mode)

    def enable_constant_folding(self, mode: bool = True) -> None:
        """Compute ops on constants (free eager tensors that are not parameters) at compile time."""
        self._set("constant_folding", mode)

    def enable_dce(self, mode: bool = True) -> None:
        """Dead-code elimination: drop ops whose results reach no output and no variable update."""
        self._set("dce", mode)

    def enable_fusion(self, mode: bool = True) -> None:
        """Run chains of elementwise ops in one buffer (NumPy ``out=``)."""
        self._set("fusion", mode)

    def enable_memory_plan(self, mode: bool = True) -> None:
        """Free blobs after their last use and reuse buffers by liveness."""
        self._set("memory_plan", mode)

    # ---- OneFlow's fusion switches --------------------------------------------------------------
    def allow_fuse_add_to_output(self, mode: bool = True) -> None:
        """Fuse an add of two same-shaped tensors into the op producing one of them (a matmul, linear,
        convolution or batch norm whose result nothing else reads): the op's result buffer receives the
        sum (one ``fused_add_to_output`` op, adding in place), so the add allocates nothing. Off by default."""
        self._set("fuse_add_to_output", mode, "allow_fuse_add_to_output")

    def allow_fuse_model_update_ops(self, mode: bool = True) -> None:
        """Fold a constant scaling of a gradient (``grad * s``, ``grad / s``, ``-grad``) read only by an SGD
        update (``sgd_update``) into the update's ``scale`` attribute: one op instead of two, as OneFlow's
        fused model update. With a dynamic grad scaler (``nn.Graph.set_grad_scaler``) it also captures the
        optimizer step with the fused update ops, which skip a step with an inf / NaN gradient themselves
        (``skip_if``, Note [Graph AMP] in graph/amp.py): a capture option too. Off by default."""
        self._set("fuse_model_update_ops", mode, "allow_fuse_model_update_ops", self._on_recapture)

    def allow_fuse_cast_scale(self, mode: bool = True) -> None:
        """Fuse a ``cast`` followed by a multiplication by a one-element tensor (or a constant) into one
        ``fused_cast_scale`` op (the gradient unscaling of mixed precision). Off by default."""
        self._set("fuse_cast_scale", mode, "allow_fuse_cast_scale")

    def allow_fuse_elementwise_kernels(self, mode: bool = True) -> None:
        """Compile each region of elementwise ops (arithmetic, relu, tanh and their grads, float32 / float64) into
        one generated kernel (numba, an optional dependency: ``pip install oneflow-lite[jit]``; without it the
        graph runs unfused), cached on disk (Note [Fused elementwise kernels] in graph/kernel_fusion.py). Off by
        default."""
        self._set("fuse_elementwise_kernels", mode, "allow_fuse_elementwise_kernels")

    def allow_fuse_softmax_cross_entropy(self, mode: bool = True) -> None:
        """Run ``cross_entropy``'s ``log_softmax`` + ``nll`` (mean or sum, no class weight) as one kernel, and their
        grads as one, compiled by numba (the jit extra; without it the graph runs unfused); equal to the unfused
        graph within a few float32 ulp (Note [Fused softmax cross-entropy] in graph/xent_fusion.py). Off by
        default."""
        self._set("fuse_softmax_cross_entropy", mode, "allow_fuse_softmax_cross_entropy")

    # ---- capture options (Note [Capture options]) -----------------------------------------------
    def set_gradient_accumulation_steps(self, value: int) -> None:
        """One call of the graph takes a batch of ``value`` micro-batches (its tensor inputs are split along
        dimension 0), runs ``build()`` on each, accumulating the parameters' gradients (summed, as OneFlow's
        ``acc``), then the optimizer step once; outputs are concatenated along dimension 0 (a scalar output
        becomes a vector of ``value`` elements), as OneFlow's. See Note [Gradient accumulation] in
        graph/accumulation.py."""
        if type(value) is not int or value < 1:
            raise ValueError(f"GraphConfig.set_gradient_accumulation_steps(): value must be an int >= 1, got "
                             f"{value!r}")
        if value != self._grad_acc_steps:
            self._grad_acc_steps = value
            if self._on_recapture is not None:
                self._on_recapture()

    @property
    def gradient_accumulation_steps(self) -> int:
        return self._grad_acc_steps

    def enable_amp(self, mode: bool = True, *, dtype=dtypes.float16) -> None:
        """Mixed precision: ``build()`` is captured under ``flow.autocast`` with ``dtype`` (float16 by default, as
        OneFlow's; or ``flow.bfloat16``), so the job records the casts of the autocast policies, and
        ``backward()`` runs outside autocast. With ``nn.Graph.set_grad_scaler`` the job also scales the loss (Note
        [Graph AMP] in graph/amp.py)."""
        if type(mode) is not bool:
            raise TypeError(f"GraphConfig.enable_amp(): mode must be a bool, got {type(mode).__name__}")
        allowed = tuple(d for d in (dtypes.float16, getattr(dtypes, "bfloat16", None)) if d is not None)
        if dtype not in allowed:
            raise ValueError(f"GraphConfig.enable_amp(): dtype must be one of "
                             f"{', '.join('flow.' + d.name for d in allowed)}, got {dtype!r}")
        value = dtype if mode else None
        if value is not self._amp_dtype:
            self._amp_dtype = value
            if self._on_recapture is not None:
                self._on_recapture()

    @property
    def amp_enabled(self) -> bool:
        return self._amp_dtype is not None

    def capture_options(self) -> dict:
        """The options the capture reads (Note [Capture options])."""
        return {"grad_acc_steps": self._grad_acc_steps, "amp_dtype": self._amp_dtype,
                "fuse_model_update_ops": self._flags["fuse_model_update_ops"]}

    # ---- CUDA options -----------------------------------------------------------------------------
    def enable_cudnn_conv_heuristic_search_algo(self, mode: bool = True) -> None:
        """OneFlow's choice of cuDNN convolution algorithms by heuristics (True, the default) or by benchmarking:
        recorded (``as_dict``) for scripts written for CUDA; the cpu kernels have one algorithm, so it changes no
        result and no plan."""
        if type(mode) is not bool:
            raise TypeError(f"GraphConfig.enable_cudnn_conv_heuristic_search_algo(): mode must be a bool, got "
                            f"{type(mode).__name__}")
        self._cudnn_conv_heuristic = mode

    # ---- queries --------------------------------------------------------------------------------
    def _train(self, mode: bool = True) -> None:
        """Mark the graph as training (``add_optimizer`` does, as OneFlow's)."""
        self._training = bool(mode)

    @property
    def training(self) -> bool:
        """Whether the graph has an optimizer (OneFlow's ``config.training``)."""
        return self._training

    def is_enabled(self, name: str) -> bool:
        return self._flags[name]

    def as_dict(self) -> dict:
        amp = None if self._amp_dtype is None else self._amp_dtype.name
        return {**self._flags, "gradient_accumulation_steps": self._grad_acc_steps, "amp": amp,
                "cudnn_conv_heuristic_search_algo": self._cudnn_conv_heuristic}

    def __repr__(self):
        return "GraphConfig(" + ", ".join(f"{k}={v}" for k, v in self.as_dict().items()) + ")"
