"""Helpers for the book *FP32 matrix multiplication, from a CPU loop to cuBLAS speed*.

Five lines run a kernel the same way on a GPU (CuPy) and without one (the CPU emulator)::

    from book import load_kernel, xp, to_device, to_host
    kernel = load_kernel("04_tiled.cu", "matmul_tiled", defines={"TILE": 16})
    A, B, C = to_device(a), to_device(b), xp.full((M, N), xp.nan, dtype=xp.float32)
    kernel(((N + 15) // 16, (M + 15) // 16), (16, 16), (A, B, C, np.int32(M), np.int32(N), np.int32(K)))
    c = to_host(C)

Nothing here plots or prints on import.
"""
from .launch.cuda_source import KernelSourceError
from .launch.runtime import (BACKEND, CompilerWarning, Kernel, KernelCompileError, LaunchError,
                             device_limits, load_kernel, synchronize, to_device, to_host, xp)


def __getattr__(name: str):
    """``book.sgemm``: the book's own SGEMM (chapter 9), imported on first use."""
    if name == "sgemm":
        from .blas import sgemm
        globals()["sgemm"] = sgemm  # (kept: later lookups skip this function, a call's cost)
        return sgemm
    raise AttributeError(f"module 'book' has no attribute {name!r}")


__all__ = ["sgemm", "BACKEND", "CompilerWarning", "Kernel", "KernelCompileError", "KernelSourceError", "LaunchError",
           "device_limits", "load_kernel", "synchronize", "to_device", "to_host", "xp"]
