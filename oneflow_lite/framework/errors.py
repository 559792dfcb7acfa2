"""Exceptions raised by the framework's layers."""


class OpDefinitionError(ValueError):
    """A user-op definition or an op conf does not match the registered definition."""


class OpKernelNotFoundError(RuntimeError):
    """No kernel of an op matches the device and dtypes of a call."""


class DispatchError(RuntimeError):
    """A call reached a dispatch key that has no handler for the op."""


class RegistrationError(RuntimeError):
    """A registration could not be made; the registry is unchanged."""


class KernelContractError(RuntimeError):
    """A kernel returned outputs whose shape or dtype differ from what its op's inference promised: a bug in
    the kernel or the infer function, never in the caller's arguments."""


class LinAlgError(RuntimeError):
    """A linear-algebra kernel met an input its algorithm cannot handle (a singular matrix, a matrix that
    is not positive-definite): PyTorch's ``torch.linalg.LinAlgError``, raised by kernels on every device."""


# Note [Errors name their op]
# Every error names the op it comes from (DESIGN.md section 5). A helper that many ops share and that does not
# know which op called it (type promotion) raises its error marked by ``unnamed_op``; the functional layer
# (functors/functional.py) catches it on its way out of ``flow.<name>`` and prefixes the function's name,
# once: the innermost functional call names it.
def unnamed_op(exc: BaseException) -> BaseException:
    """``exc`` marked for the functional layer to prefix with the name of the function it leaves."""
    exc.op_unnamed = True
    return exc


def name_the_op(exc: BaseException, name: str) -> None:
    """Prefix ``exc``'s message with ``name`` (an exception marked by :func:`unnamed_op`), and unmark it."""
    exc.op_unnamed = False
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{name}: {exc.args[0]}",) + exc.args[1:]
