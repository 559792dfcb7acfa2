"""``flow.mock_torch``: run PyTorch code unchanged on oneflow_lite (OneFlow's ``oneflow.mock_torch``).

::

    import oneflow_lite as flow
    flow.mock_torch.enable()          # from here on, ``import torch`` is oneflow_lite
    import torch
    import torch.nn.functional as F   # oneflow_lite.nn.functional
    flow.mock_torch.disable()         # ``import torch`` is PyTorch again (if installed)

    with flow.mock_torch.enable():    # or only inside a block
        import torch

    python -m oneflow_lite.mock_torch run script.py [args]    # run an unmodified script

Note [Mocking torch]
``enable()`` puts an import hook first on ``sys.meta_path`` (not a fixed list of
names): ``torch`` and every ``torch.<a>.<b>`` resolve to ``oneflow_lite.<a>.<b>``.
Each is a thin proxy module: attribute reads go to the oneflow_lite module (the
same classes and functions, so ``isinstance(x, torch.Tensor)`` holds), writes too
(``torch.backends.cudnn.benchmark = True``), and a submodule comes back as its
proxy. A name oneflow_lite does not provide raises ``AttributeError`` (an import
of a missing submodule ``ModuleNotFoundError``) naming the torch name and saying
it is not provided, so ``hasattr`` and ``try: import`` work as scripts expect.
``disable()`` removes the hook and the proxies, and puts back any real
``torch`` modules that were imported before ``enable()``. ``torch.__version__``
is the PyTorch API level oneflow_lite follows (``TORCH_API_VERSION``), with
oneflow_lite's own version as the local part.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
import types

from oneflow_lite._version import __version__ as _flow_version

__all__ = ["TORCH_API_VERSION", "disable", "enable", "is_enabled"]

TORCH_API_VERSION = "2.6.0"
_PACKAGE = "oneflow_lite"
_lock = threading.RLock()
_state = {"finder": None, "saved": {}}


def _torch_name(real_name: str) -> str:
    return "torch" + real_name[len(_PACKAGE):]


def _real_name(torch_name: str) -> str:
    return _PACKAGE + torch_name[len("torch"):]


class _TorchModule(types.ModuleType):
    """``torch.<path>`` as a view of ``oneflow_lite.<path>`` (Note [Mocking torch])."""

    def __init__(self, name: str, real: types.ModuleType):
        super().__init__(name, real.__doc__)
        self.__dict__["_real"] = real
        if hasattr(real, "__path__"):
            self.__dict__["__path__"] = []  # a package: ``import torch.<sub>`` goes through the finder
        if name == "torch":
            self.__dict__["__version__"] = f"{TORCH_API_VERSION}+oneflowlite{_flow_version.replace('.', '')}"

    def __getattr__(self, name: str):
        real = self.__dict__["_real"]
        try:
            value = getattr(real, name)
        except AttributeError:
            if name.startswith("__"):
                raise
            value = _submodule(real, name)
            if value is None:
                raise AttributeError(f"module '{self.__name__}' has no attribute '{name}': {self.__name__}.{name} "
                                     f"is not provided by oneflow_lite") from None
        if isinstance(value, types.ModuleType) and value.__name__.startswith(_PACKAGE + "."):
            return _proxy_of(value)
        return value

    def __setattr__(self, name, value):
        if name.startswith("__") or isinstance(value, _TorchModule):
            self.__dict__[name] = value  # the import system's own bookkeeping stays on the proxy
        else:
            setattr(self.__dict__["_real"], name, value)

    def __dir__(self):
        return sorted(set(dir(self.__dict__["_real"])) | set(self.__dict__))

    def __repr__(self):
        return f"<module '{self.__name__}' (oneflow_lite's {self.__dict__['_real'].__name__})>"


_proxies: dict[str, _TorchModule] = {}  # oneflow_lite module name -> its proxy (kept after disable())


def _proxy_of(real: types.ModuleType) -> _TorchModule:
    """The one proxy of ``real``: a ``torch`` module object a script imported keeps resolving to oneflow_lite
    after ``disable()`` (only new imports of ``torch`` see PyTorch again)."""
    proxy = _proxies.get(real.__name__)
    if proxy is None:
        with _lock:
            proxy = _proxies.setdefault(real.__name__, _TorchModule(_torch_name(real.__name__), real))
    return proxy


def _submodule(real: types.ModuleType, name: str):
    """``real.<name>`` imported as a submodule, or None when there is none."""
    if not hasattr(real, "__path__"):
        return None
    full = f"{real.__name__}.{name}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as e:
        if e.name == full:
            return None
        raise


class _Loader(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return _proxy_of(self.real)

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """Resolves ``torch`` and ``torch.*`` to proxies of ``oneflow_lite.*``."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        real_name = _real_name(fullname)
        try:
            real = importlib.import_module(real_name)
        except ModuleNotFoundError as e:
            if e.name != real_name:
                raise
            raise ModuleNotFoundError(f"No module named '{fullname}': {fullname} is not provided by oneflow_lite "
                                      f"(flow.mock_torch maps torch.* to oneflow_lite.*)", name=fullname) from None
        return importlib.util.spec_from_loader(fullname, _Loader(real), is_package=hasattr(real, "__path__"))


class _Enabled:
    """What ``enable()`` returns: usable as a context manager that disables on exit."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        disable()
        return False


def enable(lazy: bool = False, verbose: bool = False) -> _Enabled:
    """From now on ``import torch`` (and every ``torch.*``) is oneflow_lite (Note [Mocking torch]).

    ``lazy`` and ``verbose`` are OneFlow's arguments: names are always resolved lazily here, and
    ``verbose=True`` prints each torch module as it is mapped."""
    with _lock:
        if _state["finder"] is None:
            saved = {name: mod for name, mod in sys.modules.items()
                     if name == "torch" or name.startswith("torch.")}
            for name in saved:
                del sys.modules[name]
            _state["saved"] = saved
            finder = _Finder()
            if verbose:
                inner = finder.find_spec

                def find_spec(fullname, path, target=None):
                    spec = inner(fullname, path, target)
                    if spec is not None:
                        print(f"mock_torch: {fullname} -> {_real_name(fullname)}", file=sys.stderr)
                    return spec
                finder.find_spec = find_spec
            sys.meta_path.insert(0, finder)
            _state["finder"] = finder
    return _Enabled()


def disable() -> None:
    """``import torch`` is PyTorch again: the hook and the proxies go, real torch modules come back."""
    with _lock:
        finder = _state["finder"]
        if finder is None:
            return
        sys.meta_path.remove(finder)
        for name in [n for n, m in sys.modules.items() if isinstance(m, _TorchModule)]:
            del sys.modules[name]
        sys.modules.update(_state["saved"])
        _state["finder"] = None
        _state["saved"] = {}


def is_enabled() -> bool:
    """Whether ``import torch`` currently resolves to oneflow_lite."""
    return _state["finder"] is not None
