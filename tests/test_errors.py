"""Every bad launch gives a clear error naming the kernel and the cause, on both backends."""
import numpy as np
import pytest

from book import (BACKEND, KernelCompileError, KernelSourceError, LaunchError, load_kernel,
                  to_device, xp)

M = N = K = 8


@pytest.fixture
def naive():
    return load_kernel("02_naive.cu", "matmul_naive")


def args(a_dtype=np.float32, m=M):
    A = xp.ones((M, K), dtype=a_dtype)
    B = xp.ones((K, N), dtype=xp.float32)
    C = xp.zeros((M, N), dtype=xp.float32)
    return [A, B, C, m, np.int32(N), np.int32(K)]


def test_good_launch_passes(naive):
    a = args(m=np.int32(M))
    naive((1, 1), (8, 8), a)
    assert float(a[2].sum()) == M * N * K


def test_wrong_argument_count(naive):
    with pytest.raises(LaunchError, match=r"matmul_naive takes 6 arguments \(A, B, C, M, N, K\), got 5"):
        naive((1, 1), (8, 8), args(m=np.int32(M))[:5])


def test_float64_array_for_const_float_pointer(naive):
    with pytest.raises(LaunchError, match=r"matmul_naive: argument 1 'A' \(const float\*\) expects "
                                          r"a float32 array, got float64"):
        naive((1, 1), (8, 8), args(a_dtype=np.float64, m=np.int32(M)))


def test_python_int_for_int(naive):
    with pytest.raises(LaunchError, match=r"argument 4 'M' \(int\) expects np.int32, got Python "
                                          r"int; pass np.int32\(value\)"):
        naive((1, 1), (8, 8), args(m=M))


def test_wrong_scalar_width(naive):
    with pytest.raises(LaunchError, match=r"argument 4 'M' \(int\) expects np.int32, got np.int64"):
        naive((1, 1), (8, 8), args(m=np.int64(M)))


def test_host_array_on_wrong_backend_or_list(naive):
    a = args(m=np.int32(M))
    a[1] = [[1.0] * N] * K
    with pytest.raises(LaunchError, match=r"argument 2 'B' \(const float\*\) expects a \w+ array"):
        naive((1, 1), (8, 8), a)


def test_non_contiguous_array(naive):
    a = args(m=np.int32(M))
    a[0] = xp.ones((M, 2 * K), dtype=xp.float32)[:, ::2]
    with pytest.raises(LaunchError, match=r"argument 1 'A' .* C-contiguous"):
        naive((1, 1), (8, 8), a)


def test_misaligned_float4(semantics):
    x = xp.ones(4 * 9, dtype=xp.float32)
    with pytest.raises(LaunchError, match=r"scale_float4: argument 1 'in' \(const float4\*\) needs "
                                          r"16-byte aligned data"):
        semantics("scale_float4")(1, 8, (x[1:33], x[:32], np.int32(8)))


def test_block_over_1024_threads(naive):
    with pytest.raises(LaunchError, match=r"matmul_naive: block 64x32x1 has 2048 threads, over the "
                                          r"limit of 1024"):
        naive((1, 1), (64, 32), args(m=np.int32(M)))


@pytest.mark.parametrize("grid, block, what", [((0, 1), (8, 8), "grid dimension x is 0"),
                                               ((1, 1), (8, 0), "block dimension y is 0"),
                                               ((1, 1), (1, 1, 65), "block dimension z is 65")])
def test_bad_dimensions(naive, grid, block, what):
    with pytest.raises(LaunchError, match=f"matmul_naive: {what}"):
        naive(grid, block, args(m=np.int32(M)))


def test_an_unused_shared_array_does_not_count_against_the_limit(semantics):
    """The CPU backend counts static shared memory from an unoptimized build first (fast), then
    asks the optimized one, as the GPU has it, before refusing a launch."""
    kernel = semantics("unused_shared")
    if kernel.module.static_shared("unused_shared", exact=True) != 0:
        pytest.skip(f"no static shared memory size without a ptxas report ({kernel.module._report_error})")
    out = xp.zeros(256, dtype=xp.float32)
    kernel(1, 256, (out,), shared_mem=48 * 1024)
    assert float(out.sum()) == 512.0


def test_shared_memory_over_limit_and_opt_in(semantics):
    kernel = semantics("uses_shared")
    if kernel.module.static_shared("uses_shared") == 0:
        pytest.skip(f"no static shared memory size without a ptxas report ({kernel.module._report_error})")
    out = xp.zeros(256, dtype=xp.float32)
    with pytest.raises(LaunchError, match=r"uses_shared: 49152 bytes of dynamic shared memory "
                                          r"\(\+ 1024 static\) exceed the 49152-byte limit"):
        kernel(1, 256, (out,), shared_mem=48 * 1024)
    kernel.max_dynamic_shared_size_bytes = 64 * 1024  # opt in, as CuPy allows on the GPU
    try:
        kernel(1, 256, (out,), shared_mem=48 * 1024)
        assert float(out.sum()) == float(np.arange(256).sum() + 256)
        with pytest.raises(LaunchError, match="over the device's opt-in limit"):
            kernel.max_dynamic_shared_size_bytes = 10**7
    finally:
        kernel.max_dynamic_shared_size_bytes = 48 * 1024


def test_compile_error_names_file_and_line(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text('extern "C" __global__ void broken(float* x) {\n'
                   '    x[threadIdx.x] = 1.0f;\n'
                   '    x[0] = undefined_name;\n'
                   '}\n')
    with pytest.raises(KernelCompileError, match=r"broken\.cu[:(]3[):]") as info:
        load_kernel(src, "broken")
    assert "undefined_name" in str(info.value)


def test_unknown_kernel_and_file():
    with pytest.raises(KernelSourceError, match=r"02_naive.cu has no .* kernel 'nope' \(it defines: "
                                                r"matmul_naive, matmul_naive_1d\)"):
        load_kernel("02_naive.cu", "nope")
    with pytest.raises(KernelSourceError, match="kernel source 'missing.cu' not found"):
        load_kernel("missing.cu", "x")


def test_second_load_is_the_same_kernel():
    assert load_kernel("04_tiled.cu", "matmul_tiled", {"TILE": 8}) is \
        load_kernel("04_tiled.cu", "matmul_tiled", {"TILE": 8})


def test_a_define_equal_to_the_sources_default_is_the_same_build():
    """-DTILE=16 where 04_tiled.cu has #ifndef TILE, #define TILE 16: the build without it (one
    compile, one cache entry: chapter 10's variants name their defaults, other loads do not);
    another value is another build. A default named before its #ifndef (08_async.cu's PADB, which
    warptile.cuh defaults), or inside another conditional, is none."""
    from book.launch.cuda_source import default_defines
    plain = load_kernel("04_tiled.cu", "matmul_tiled")
    assert load_kernel("04_tiled.cu", "matmul_tiled", {"TILE": 16}) is plain
    assert load_kernel("04_tiled.cu", "matmul_tiled", {"TILE": 8}).module is not plain.module
    text = ("#ifndef A\n#define A 1\n#endif\n#if B\n#ifndef C\n#define C 2\n#endif\n#endif\n"
            "int x = D;\n#ifndef D\n#define D 3\n#endif\n#ifndef GUARD\n#define GUARD\n"
            "#ifndef E\n#define E (4 + 1)  // five\n#endif\n#endif\n")
    assert default_defines(text) == {"A": "1", "E": "(4 + 1)"}


@pytest.mark.skipif(BACKEND != "cpu", reason="the CPU backend's own disk cache")
def test_cpu_cache_hit_does_not_recompile(tmp_path, monkeypatch):
    from book.launch import emulator, runtime
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path))
    src = tmp_path / "cached.cu"
    src.write_text('extern "C" __global__ void one(float* x) { x[threadIdx.x] = 1.0f; }\n')
    before = emulator.COMPILES["count"]
    load_kernel(src, "one")
    assert emulator.COMPILES["count"] == before + 1
    monkeypatch.setattr(runtime, "_modules", {})  # a new process, as far as the cache can tell
    monkeypatch.setattr(runtime, "_kernels", {})
    kernel = load_kernel(src, "one")
    assert emulator.COMPILES["count"] == before + 1
    out = xp.zeros(4, dtype=xp.float32)
    kernel(1, 4, (out,))
    assert out.tolist() == [1.0] * 4


def test_resource_report():
    kernel = load_kernel("04_tiled.cu", "matmul_tiled", {"TILE": 16})
    if BACKEND == "cpu" and not kernel.module._report_or_compile_error():
        pytest.skip(f"no ptxas report from this NVRTC ({kernel.module._report_error})")
    attrs = kernel.attributes
    assert attrs["shared_size_bytes"] == 2 * 16 * 16 * 4
    assert 0 < attrs["num_regs"] <= 255
    assert attrs["local_size_bytes"] == 0 and attrs["spill_stores"] in (0, None)


def test_static_shared_memory_over_the_limit_does_not_compile(tmp_path):
    """64 KiB of static __shared__ in one kernel: ptxas refuses it on a GPU, and so does the
    CPU backend's NVRTC check (whose cheap PTX-only compile bounds the shared memory, then asks
    ptxas where the bound is over 48 KiB)."""
    src = tmp_path / "big_shared.cu"
    src.write_text('extern "C" __global__ void big(float* x) {\n'
                   '    __shared__ float s[16384];\n'
                   '    s[threadIdx.x] = x[threadIdx.x];\n'
                   '    __syncthreads();\n'
                   '    x[threadIdx.x] = s[(threadIdx.x + 1) % 32];\n'
                   '}\n')
    with pytest.raises((KernelCompileError, KernelSourceError), match=r"too much shared data"):
        load_kernel(src, "big")(1, 32, (xp.ones(32, dtype=xp.float32),))


def test_the_ptx_declares_its_static_shared_memory():
    from book.launch.compiler_log import ptx_shared_bytes
    ptx = ("\t.shared .align 4 .b8 _ZZ5tiledE2As[4096];\n\t.shared .align 4 .b8 _ZZ5tiledE2Bs[4096];\n"
           "\t.shared .align 4 .u32 _ZZ4histE5count;\n\t.extern .shared .align 16 .b8 dsmem[];\n"
           "\tld.shared.f32 %f1, [%rd1];\n")
    assert ptx_shared_bytes(ptx) == 4096 + 4096 + 4
