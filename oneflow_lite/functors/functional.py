"""Functional functions built from signatures: overload resolution, then the functor.

Overloads are tried in declaration order and the first whose arguments bind
wins. When none binds, ``TypeError`` names the function and lists the valid
signatures (with the specific reason when there is just one).
"""

from __future__ import annotations

from oneflow_lite.functors.registry import get_functor
from oneflow_lite.functors.signature import Signature, SignatureMismatch, describe_call


class FunctionalFunction:
    """A callable ``flow.<name>``: its overloads and their functors."""

    __slots__ = ("__name__", "__qualname__", "__dict__", "signatures", "_functors")

    def __init__(self, name: str, signatures: list[str], doc: str | None = None):
        self.__name__ = self.__qualname__ = name
        self.signatures = [Signature(s) for s in signatures]
        self._functors = [None] * len(self.signatures)
        lines = [f"{name}{s.params_text()} -> {s.return_type}" for s in self.signatures]
        self.__doc__ = (doc + "\n\n" if doc else "") + "Signatures:\n" + "\n".join("  " + l for l in lines)

    def __call__(self, *args, **kwargs):
        for i, sig in enumerate(self.signatures):
            try:
                values = sig.bind(self.__name__, args, kwargs)
            except SignatureMismatch as e:
                if len(self.signatures) == 1:
                    raise TypeError(f"{e}\nValid signature: {self.__name__}{sig.params_text()}") from None
                continue
            fn = self._functors[i]
            if fn is None:
                fn = self._functors[i] = get_functor(sig.functor_name)
            return fn(*values)
        expected = "\n".join(f" * {self.__name__}{s.params_text()}" for s in self.signatures)
        raise TypeError(f"{self.__name__}() received an invalid combination of arguments - got "
                        f"{describe_call(args, kwargs)}, but expected one of:\n{expected}")

    def __repr__(self):
        return f"<functional {self.__name__}>"
