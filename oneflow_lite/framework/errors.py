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
