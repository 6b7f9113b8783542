"""Any array a user holds, in and out of ``sgemm``: a CuPy (or, on the emulator, NumPy) array as
it is; a PyTorch tensor, or any object with ``__cuda_array_interface__`` or ``__dlpack__``, as a
view of the same memory (no copy); the result returned as the kind of array the caller passed.

On a GPU a call with PyTorch tensors runs on PyTorch's current stream, so that it is ordered
after the work PyTorch queued on those tensors and before what it queues next, as a
``torch.matmul`` would be.
"""
from __future__ import annotations

import contextlib
import sys

from ..launch.runtime import BACKEND, LaunchError, xp


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "is_cuda")


def as_backend(x, name: str):
    """``x`` as an array of this backend: itself, or a view of its memory."""
    if isinstance(x, xp.ndarray):
        return x
    if BACKEND == "gpu" and type(x).__module__ == "numpy":
        raise LaunchError(f"sgemm: {name} must be a 2-D {xp.__name__} array in the GPU's memory, "
                          f"got a NumPy array (the host's): {xp.__name__}.asarray({name}) copies it")
    try:
        if BACKEND == "gpu" and hasattr(x, "__cuda_array_interface__"):
            return xp.asarray(x)  # (a CUDA tensor of PyTorch has one: strides and all)
        if hasattr(x, "__dlpack__"):
            return xp.from_dlpack(x)
        if BACKEND == "cpu" and hasattr(x, "__array_interface__"):
            return xp.asarray(x)
    except Exception as exc:  # a CPU tensor on the GPU backend, a device the backend cannot read
        raise LaunchError(f"sgemm: {name} ({type(x).__name__}) cannot be read as a "
                          f"{xp.__name__} array without a copy: {exc}") from None
    raise LaunchError(f"sgemm: {name} must be a 2-D {xp.__name__} array, a PyTorch tensor or an "
                      f"object with __cuda_array_interface__ or __dlpack__, got "
                      f"{type(x).__name__}")


def stream_of(*arrays):
    """A context that runs the call on PyTorch's current stream where an operand is a CUDA
    tensor of PyTorch (else nothing changes)."""
    if BACKEND == "gpu":
        for x in arrays:
            if _is_torch(x) and x.is_cuda:
                import torch
                stream = torch.cuda.current_stream(x.device)
                from_external = getattr(xp.cuda.Stream, "from_external", None)  # CuPy 14
                if from_external is not None and hasattr(stream, "__cuda_stream__"):
                    return from_external(stream)
                return xp.cuda.ExternalStream(stream.cuda_stream)
    return contextlib.nullcontext()


def returned(result, A, out):
    """What ``sgemm`` returns: ``out`` as the caller passed it, else ``result`` as the kind of
    array A is (a PyTorch tensor for a tensor, through DLPack for another library's array)."""
    if out is not None:
        return out
    if isinstance(A, xp.ndarray):
        return result
    if _is_torch(A):
        import torch
        return torch.from_dlpack(result)
    module = sys.modules.get(type(A).__module__.split(".")[0])
    from_dlpack = getattr(module, "from_dlpack", None)
    return from_dlpack(result) if from_dlpack is not None else result
