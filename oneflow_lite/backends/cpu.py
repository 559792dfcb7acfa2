"""``flow.backends.cpu``: the CPU backend (NumPy)."""


def get_cpu_capability() -> str:
    """``"DEFAULT"``: oneflow_lite dispatches no vectorised code paths of its own."""
    return "DEFAULT"
