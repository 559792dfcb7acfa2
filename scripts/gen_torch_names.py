"""Write tests/compat/torch_names.json: PyTorch's public names per group, read from an installed torch.

    pip install torch==2.13.0 && python scripts/gen_torch_names.py

Names are facts about PyTorch: the file is generated once and committed; tests/test_torch_coverage.py
reports how many of them oneflow_lite provides (under flow.mock_torch, where `torch` is oneflow_lite).
"""

from __future__ import annotations

import inspect
import json
import pathlib

import torch
import torch.nn
import torch.nn.functional
import torch.optim
import torch.optim.lr_scheduler
import torch.utils.data

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "compat" / "torch_names.json"


def public(module, keep=lambda name, value: True):
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    out = []
    for name in sorted(set(names)):
        if name.startswith("_"):
            continue
        try:
            value = getattr(module, name)
        except AttributeError:
            continue
        if inspect.ismodule(value):
            continue
        if keep(name, value):
            out.append(name)
    return out


def torch_functions(name, value):
    """Functions and classes of ``torch.*`` (not dtypes, constants, typing helpers or submodules)."""
    return callable(value) and not isinstance(value, torch.dtype)


def layer_class(name, value):
    return inspect.isclass(value) and issubclass(value, torch.nn.Module)


def main():
    groups = {
        "torch": public(torch, torch_functions),
        "torch.dtypes": sorted(n for n in dir(torch) if isinstance(getattr(torch, n, None), torch.dtype)),
        "torch.nn": public(torch.nn, layer_class),
        "torch.nn.functional": public(torch.nn.functional, lambda n, v: callable(v)),
        "torch.optim": public(torch.optim, lambda n, v: inspect.isclass(v)),
        "torch.optim.lr_scheduler": public(torch.optim.lr_scheduler, lambda n, v: inspect.isclass(v)),
        "torch.utils.data": public(torch.utils.data, lambda n, v: callable(v)),
        "torch.Tensor": sorted(n for n in dir(torch.Tensor) if not n.startswith("_") or
                               (n.startswith("__") and n.endswith("__") and n in _DUNDERS)),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"torch_version": torch.__version__, "groups": groups}, indent=1) + "\n")
    for g, names in groups.items():
        print(f"{g}: {len(names)}")


_DUNDERS = {"__abs__", "__add__", "__and__", "__bool__", "__contains__", "__deepcopy__", "__eq__", "__float__",
            "__floordiv__", "__format__", "__ge__", "__getitem__", "__gt__", "__iadd__", "__iand__", "__idiv__",
            "__ifloordiv__", "__ilshift__", "__imod__", "__imul__", "__index__", "__int__", "__invert__", "__ior__",
            "__ipow__", "__irshift__", "__isub__", "__iter__", "__itruediv__", "__ixor__", "__le__", "__len__",
            "__lshift__", "__lt__", "__matmul__", "__mod__", "__mul__", "__ne__", "__neg__", "__or__", "__pos__",
            "__pow__", "__radd__", "__rand__", "__rfloordiv__", "__rlshift__", "__rmatmul__", "__rmod__", "__rmul__",
            "__ror__", "__rpow__", "__rrshift__", "__rshift__", "__rsub__", "__rtruediv__", "__rxor__", "__setitem__",
            "__sub__", "__truediv__", "__xor__", "__array__", "__reduce_ex__", "__setstate__", "__hash__",
            "__repr__", "__reversed__", "__complex__", "__dlpack__"}

if __name__ == "__main__":
    main()
