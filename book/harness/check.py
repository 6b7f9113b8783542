"""Checking a kernel before it is timed (chapter 0): random inputs, NaN-poisoned output,
relative Frobenius error against a float64 reference. NaN never passes."""
from __future__ import annotations

import numpy as np

from ..launch.runtime import BACKEND, cupy, to_device, to_host, xp

TOLERANCE = 1e-5
"""Largest relative Frobenius error accepted for an FP32 matmul checked against float64."""


def tolerance_of(spec, default: float = TOLERANCE) -> float:
    """The relative error a kernel may have: its own ``tolerance`` where it states one (plain
    TF32's is larger), never below ``default``."""
    return max(default, getattr(spec, "tolerance", 0.0))


def random_inputs(M: int, N: int, K: int, seed: int | None = None, low: float = -1.0,
                  high: float = 1.0):
    """Host float32 A (M x K) and B (K x N), uniform in [low, high): never zeros or constants."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(low, high, (M, K)).astype(np.float32)
    b = rng.uniform(low, high, (K, N)).astype(np.float32)
    return a, b


def device_inputs(M: int, N: int, K: int, seed: int = 0, low: float = -1.0, high: float = 1.0):
    """Float32 A (M x K) and B (K x N) uniform in [low, high), made where kernels run: on a GPU by
    CuPy's generator (no host work or copy: milliseconds at n = 8192, where NumPy takes seconds),
    on the CPU backend by :func:`random_inputs`."""
    if BACKEND != "gpu":
        return random_inputs(M, N, K, seed, low, high)
    rng = cupy.random.RandomState(seed)
    return (rng.uniform(low, high, (M, K), dtype=np.float32),
            rng.uniform(low, high, (K, N), dtype=np.float32))


def relative_error(out, ref) -> float:
    """||out - ref||_F / ||ref||_F in float64; inf if out holds any NaN or inf."""
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        raise ValueError(f"shape mismatch: output {out.shape}, reference {ref.shape}")
    if not np.isfinite(out).all():
        return float("inf")
    scale = np.linalg.norm(ref)
    return float(np.linalg.norm(out - ref) / (scale if scale else 1.0))


def run_matmul(spec, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Launch ``spec`` (a registry entry) on host arrays a @ b; C starts as NaN. Returns C."""
    M, K = a.shape
    N = b.shape[1]
    C = xp.full((M, N), xp.nan, dtype=xp.float32)
    spec.launch(to_device(a), to_device(b), C, M, N, K)
    return to_host(C)
