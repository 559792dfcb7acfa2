"""The ``file:line`` of the user code that made a registration (for dumps and errors)."""

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Frames in these places are registration machinery, not the registering code.
_SKIPPED = tuple(os.path.join(_PACKAGE_DIR, d) + os.sep for d in ("framework", "dispatch")) + (
    os.path.join(_PACKAGE_DIR, "kernels", "registration.py"),
    os.path.join(_PACKAGE_DIR, "functors", "registry.py"),
)


def caller_location() -> str:
    """``path:line`` of the nearest frame outside the registration machinery.

    Paths inside the package are shown relative to its parent directory.
    """
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    path = frame.f_code.co_filename
    parent = os.path.dirname(_PACKAGE_DIR) + os.sep
    if path.startswith(parent):
        path = path[len(parent):]
    return f"{path}:{frame.f_lineno}"
