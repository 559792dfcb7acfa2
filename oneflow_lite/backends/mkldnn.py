"""``flow.backends.mkldnn``: oneDNN is not used (kernels are NumPy)."""

enabled = False


def is_available() -> bool:
    return False
