"""``flow.backends.cuda``: PyTorch's CUDA matmul switches; there is no CUDA here, so they only hold values."""


class _MatmulFlags:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    """False: oneflow_lite is not built with CUDA."""
    return False


def flash_sdp_enabled() -> bool:
    return False


def mem_efficient_sdp_enabled() -> bool:
    return False


def math_sdp_enabled() -> bool:
    """True: ``scaled_dot_product_attention`` uses the plain math formula."""
    return True
