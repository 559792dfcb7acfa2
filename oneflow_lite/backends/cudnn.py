"""``flow.backends.cudnn``: PyTorch's cuDNN switches; there is no cuDNN here, so they only hold values."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: oneflow_lite has no cuDNN."""
    return False


def version():
    """None: no cuDNN."""
    return None
