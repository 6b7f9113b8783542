"""Kernel signatures, headers and builds as learners write them (tests/kernels/signatures.cu):
legal CUDA runs on whichever backend runs it; what cannot run is refused with the way around."""
import warnings

import numpy as np
import pytest

from book import (BACKEND, CompilerWarning, KernelCompileError, KernelSourceError, LaunchError,
                  load_kernel, to_device, to_host, xp)
from conftest import ROOT

SIGNATURES = ROOT / "tests" / "kernels" / "signatures.cu"
PARAMS = np.dtype([("scale", "f4"), ("count", "i4"), ("offset", "f8")], align=True)


def test_extern_c_block_array_parameters_and_launch_bounds_expression():
    kernel = load_kernel(SIGNATURES, "scale_arrays")
    assert [p.ctype for p in kernel.params] == ["const float*", "float*", "float", "int"]
    x = np.arange(40, dtype=np.float32)
    out = xp.zeros(40, dtype=xp.float32)
    kernel(1, 64, (to_device(x), out, np.float32(3), np.int32(40)))
    assert np.array_equal(to_host(out), 6 * x)


def test_every_integer_spelling():
    kernel = load_kernel(SIGNATURES, "integers")
    values = [np.int8(-3), np.uint8(200), np.int16(-300), np.uint16(60000), np.int32(-70000),
              np.uint32(4_000_000_000), np.int64(-2**40), np.uint64(2**50), np.int64(-5),
              np.int64(6), np.uint64(7), np.int64(8), np.uint64(9), np.int64(10), np.uint64(11),
              np.int32(-12), np.uint16(13), np.uint32(14), np.int8(-15)]
    out = xp.zeros(20, dtype=xp.int64)
    kernel(1, 32, (out, *values))
    assert to_host(out).tolist() == [int(v) for v in values] + [2**32]
    with pytest.raises(LaunchError, match=r"argument 10 'l' \(long\) expects np.int64, got np.int32"):
        kernel(1, 32, (out, *values[:8], np.int32(-5), *values[9:]))


def test_c_headers_nvrtc_lacks_are_replaced():
    out = xp.zeros(6, dtype=xp.float64)
    load_kernel(SIGNATURES, "limits")(1, 1, (out,))
    assert to_host(out).tolist() == [2**31 - 1, float(np.finfo(np.float32).max), np.pi, -2**31, 4.0, 9.0]


def test_vectors_and_a_struct_by_value():
    kernel = load_kernel(SIGNATURES, "by_value")
    out = xp.zeros(3, dtype=xp.float32)
    params = np.array((1.5, 4, 0.25), dtype=PARAMS)[()]
    kernel(1, 1, (out, np.array([1, 2, 3, 4], np.float32), np.array([3, 5], np.int32), params))
    assert to_host(out).tolist() == [10.0, 15.0, 6.25]
    with pytest.raises(LaunchError, match=r"'v' \(float4\) is a float4 passed by value: pass its 4 "
                                          r"components as a NumPy array"):
        kernel(1, 1, (out, np.float32(1), np.array([3, 5], np.int32), params))
    with pytest.raises(LaunchError, match=r"'p' \(Params\) is a struct passed by value: pass a NumPy "
                                          r"structured scalar"):
        kernel(1, 1, (out, np.ones(4, np.float32), np.array([3, 5], np.int32), np.float32(1)))
    small = np.array((1.5, 4), dtype=[("scale", "f4"), ("count", "i4")])[()]
    try:
        kernel(1, 1, (out, np.ones(4, np.float32), np.array([3, 5], np.int32), small))
    except LaunchError as exc:  # (a GPU driver before CUDA 12.4 does not give the size)
        assert "the value given has 8 bytes, sizeof(Params) is 16" in str(exc)
    else:
        assert BACKEND == "gpu", "the emulator checks a struct's size"


@pytest.mark.parametrize("name, value", [("cpp_linkage", 3.0), ("lab::in_namespace", 4.0)])
def test_kernels_without_c_linkage(name, value):
    out = xp.zeros(8, dtype=xp.float32)
    load_kernel(SIGNATURES, name)(1, 8, (out,))
    assert to_host(out).tolist() == [value] * 8


def test_template_kernels_run_by_their_arguments():
    kernel = load_kernel(SIGNATURES, "fill<32>")
    assert [p.ctype for p in kernel.params] == ["float*", "float", "int"]
    out = xp.zeros(40, dtype=xp.float32)
    kernel(2, 32, (out, np.float32(1), np.int32(40)))
    assert to_host(out).tolist() == [33.0] * 40
    doubles = load_kernel(SIGNATURES, "fill<16, double>")
    out = xp.zeros(40, dtype=xp.float64)
    doubles(3, 16, (out, np.float64(0.5), np.int32(40)))
    assert to_host(out).tolist() == [16.5] * 40


def test_a_template_without_arguments_is_refused_with_the_way_to_call_it():
    with pytest.raises(KernelSourceError, match=r"fill is a template kernel, template <int TILE, "
                                                r"typename T = float> \(signatures.cu, line \d+\): name "
                                                r"its arguments, as in load_kernel\(src, \"fill<128, "
                                                r"float>\"\), or add an extern \"C\" __global__"):
        load_kernel(SIGNATURES, "fill")
    with pytest.raises(KernelSourceError, match=r"'fill<>': fill is template <int TILE, typename T = "
                                                r"float> \(signatures.cu, line \d+\): give 1 to 2 "
                                                r"template arguments"):
        load_kernel(SIGNATURES, "fill<>")


def test_constant_memory_set_from_python():
    kernel = load_kernel(SIGNATURES, "polynomial")
    x = np.arange(6, dtype=np.float32)
    y = xp.zeros(6, dtype=xp.float32)
    kernel.set_constant("coef", np.array([1, 2, 0, 1], np.float32))
    kernel.set_constant("bias", np.int32(10))
    kernel(1, 32, (to_device(x), y, np.int32(6)))
    assert to_host(y).tolist() == (1 + 2 * x + x**3 + 10).tolist()
    kernel.set_constant("coef", np.array([0, 0, 0, 0], np.float32))  # the next launch sees it
    kernel(1, 32, (to_device(x), y, np.int32(6)))
    assert to_host(y).tolist() == [10.0] * 6
    with pytest.raises(LaunchError, match=r"coef \(signatures.cu, line \d+\) has 16 bytes; 20 bytes "
                                          r"given"):
        kernel.set_constant("coef", np.zeros(5, np.float32))
    with pytest.raises(LaunchError, match=r"coef holds float values: pass np.float32 data, got float64"):
        kernel.set_constant("coef", np.zeros(4))
    with pytest.raises(LaunchError, match=r"no __constant__ or __device__ variable 'scale' at "
                                          r"namespace scope \(it has: coef, bias\)"):
        kernel.set_constant("scale", np.float32(1))


def test_to_device_and_to_host_copy():
    """An in-place kernel leaves the caller's array as it was, as on a GPU."""
    a = np.arange(5, dtype=np.float32)
    d = to_device(a)
    load_kernel(SIGNATURES, "negate")(1, 8, (d, np.int32(5)))
    assert a.tolist() == [0, 1, 2, 3, 4]
    back = to_host(d)
    assert back.tolist() == [0, -1, -2, -3, -4]
    back[0] = 7
    assert float(to_host(d)[0]) == 0


def test_an_edited_header_is_rebuilt_in_the_same_process(tmp_path):
    (tmp_path / "value.cuh").write_text("#define VALUE 1.0f\n")
    src = tmp_path / "uses_header.cu"
    src.write_text('#include "value.cuh"\n'
                   'extern "C" __global__ void value(float* x) { x[threadIdx.x] = VALUE; }\n')
    out = xp.zeros(4, dtype=xp.float32)
    load_kernel(src, "value")(1, 4, (out,))
    assert to_host(out).tolist() == [1.0] * 4
    (tmp_path / "value.cuh").write_text("#define VALUE 2.0f\n")
    load_kernel(src, "value")(1, 4, (out,))
    assert to_host(out).tolist() == [2.0] * 4


def test_a_header_neither_compiler_has_is_named(tmp_path):
    src = tmp_path / "stl.cu"
    src.write_text('#include <vector>\nextern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n')
    with pytest.raises(KernelCompileError, match=r"(?s)stl.cu\(1\): .*\"vector\".*NVRTC, the GPU "
                                                 r"compiler, finds no header vector: it has none of "
                                                 r"the C\+\+ standard library's headers"):
        load_kernel(src, "k")


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's C++ compiler's warning (NVRTC gives none)")
@pytest.mark.parametrize("name, body, says", [
    ("uninit", "    float acc;\n    for (int i = 0; i < 4; ++i) acc += out[i];\n    out[0] = acc;\n",
     r"uninit\.cu:\d: .acc. (may be|is) used uninitialized"),
    ("past", "    float v[4];\n    for (int i = 0; i < 4; ++i) v[i] = out[i];\n    out[0] = v[4];\n",
     r"past\.cu:4: array subscript 4 is above array bounds")])
def test_what_the_cpp_compiler_sees_is_warned_about(tmp_path, monkeypatch, name, body, says):
    """An accumulator never set, a constant index past a local array: the C++ compiler's warning,
    on the kernel's own line, when built and again from the cache."""
    from book.launch import runtime
    src = tmp_path / f"{name}.cu"
    src.write_text('extern "C" __global__ void k(float* out) {\n' + body + "}\n")
    for _ in range(2):  # built, then from the cache in a new process (as far as it can tell)
        monkeypatch.setattr(runtime, "_modules", {})
        with pytest.warns(CompilerWarning, match=says) as record:
            load_kernel(src, "k")
        assert all("cuda_emu" not in str(w.message) for w in record)


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own message")
def test_a_missing_builtin_gets_a_hint(tmp_path):
    src = tmp_path / "missing.cu"
    src.write_text('extern "C" __global__ void k(float* out) {\n'
                   '    cudaTextureObject_t t = 0;  // (textures: the emulator has none)\n'
                   '    out[0] = tex1Dfetch<float>(t, 0);\n'
                   '}\n')
    with pytest.raises(KernelCompileError, match=r"missing.cu:2:\d+: error: .cudaTextureObject_t. was "
                                                 r"not declared(?s:.*)hint: `cudaTextureObject_t`, "
                                                 r"`tex1Dfetch` look like CUDA built-ins that the CPU "
                                                 r"emulator does not provide: run the kernel on a GPU, "
                                                 r"or write them in plain C\+\+"):
        load_kernel(src, "k")


def test_book_kernels_build_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilerWarning)
        load_kernel("06_regtile.cu", "matmul_regtile",
                    {"BM": 64, "BN": 64, "BK": 8, "TM": 4, "TN": 4})
        load_kernel(SIGNATURES, "scale_arrays")


def test_a_device_variable_keeps_the_kernels_writes_between_launches(tmp_path):
    """__device__ int total: set once from Python, then each launch adds to it, as on a GPU (the
    emulator once wrote the value set from Python again before every launch)."""
    from book import load_kernel, to_host, xp
    src = tmp_path / "counter.cu"
    src.write_text('__device__ int total;\nextern "C" __global__ void add(int* out) {\n'
                   "    atomicAdd(&total, 1);\n    __syncthreads();\n"
                   "    if (threadIdx.x == 0) out[0] = total;\n}\n")
    kernel, out = load_kernel(src, "add"), xp.zeros(1, dtype=xp.int32)
    kernel.set_constant("total", np.array([0], np.int32))
    kernel(1, 64, (out,))
    kernel(1, 64, (out,))
    assert int(to_host(out)[0]) == 128
    kernel.set_constant("total", np.array([1000], np.int32))
    kernel(1, 64, (out,))
    kernel(1, 64, (out,))
    assert int(to_host(out)[0]) == 1128
