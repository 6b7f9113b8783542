"""Legal CUDA a learner writes -- atomics with literals of another type, shared-memory atomics,
the math API's intrinsics, block-wide votes -- accepted and right on whichever backend runs."""
import re

import numpy as np
import pytest

from book import BACKEND, LaunchError, load_kernel, to_device, to_host, xp
from book.registry import device_cc
from conftest import ROOT, line_of

LEARNER = ROOT / "tests" / "kernels" / "learner.cu"


def test_atomics_take_literals_and_shared_memory():
    n = 300
    keys = np.arange(n, dtype=np.int32) * 7
    count, total = xp.zeros(1, dtype=xp.uint32), xp.zeros(1, dtype=xp.float32)
    hist = xp.zeros(4, dtype=xp.int32)
    load_kernel(LEARNER, "atomics")((3,), (128,), (count, total, hist, to_device(keys), np.int32(n)))
    assert to_host(count)[0] == n and to_host(total)[0] == n
    assert list(to_host(hist)) == list(np.bincount(keys % 4, minlength=4))


def test_math_intrinsics():
    x = np.array([0.25, 1.5, 2.5, 4.0], dtype=np.float32)
    out, u = xp.zeros(32, dtype=xp.float32), xp.zeros(2, dtype=xp.uint32)
    load_kernel(LEARNER, "intrinsics")((1,), (4,), (to_device(x), out, u))
    got = to_host(out).reshape(4, 8)
    expect = np.stack([1 / np.sqrt(x), 1 / x, np.clip(x - 1, 0, 1), 1 / x, np.rint(x),
                       3 * np.trunc(x), np.ones(4), np.minimum(x, 2)], axis=1)
    assert np.allclose(got, expect, rtol=2e-6), got
    assert list(to_host(u)) == [0xF, 1]


def test_block_wide_votes_at_a_barrier():
    rng = np.random.default_rng(0)
    flags = (rng.random(3 * 96) < 0.3).astype(np.int32)
    flags[96:192] = 1  # a block where every thread votes yes
    out = xp.zeros(12, dtype=xp.int32)
    load_kernel(LEARNER, "votes")((3,), (96,), (to_device(flags), out))
    got = to_host(out).reshape(3, 4)
    per_block = flags.reshape(3, 96)
    for b in range(3):
        s = int(per_block[b].sum())
        assert list(got[b]) == [s, int(s == 96), int(s > 0), 96 - s], (b, got[b])


def test_any_kernel_name():
    """Kernels named g, args, err, fault: names the emulator's wrapper once used itself."""
    x = xp.zeros(4, dtype=xp.float32)
    for name in ("g", "args", "err", "fault"):
        load_kernel(LEARNER, name)((1,), (4,), (x,))
    assert list(to_host(x)) == [10.0] * 4


@pytest.mark.skipif(BACKEND != "cpu", reason="on a GPU a failed assert ends the CUDA context")
def test_a_failed_device_assert_names_its_text_line_and_thread():
    x = np.zeros(8, np.int32)
    x[5] = -1
    with pytest.raises(LaunchError, match=r"asserts: block \(0, 0, 0\), thread \(5, 0, 0\): device "
                                          r"assert failed: `x\[threadIdx.x\] >= 0` \(learner.cu, "
                                          r"line \d+, in void asserts\(const int\*\)\)"):
        load_kernel(LEARNER, "asserts")((1,), (8,), (x,))
    x[5] = 1
    load_kernel(LEARNER, "asserts")((1,), (8,), (x,))  # and the next launch runs


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own report")
@pytest.mark.parametrize("name, args", [("recursion", ()), ("big_local", (np.int32(5),))])
def test_a_stack_overflow_is_named_as_such(name, args):
    out = np.zeros(4, np.int32)
    with pytest.raises(LaunchError, match=rf"{name}: block \(0, 0, 0\), thread \(\d, 0, 0\): stack "
                                          r"overflow: the thread used more than the emulator's 256 KiB"):
        load_kernel(LEARNER, name)((1,), (4,), (out, *args))


def test_the_stack_size_the_message_names_is_the_emulators():
    from book.launch import emulator
    assert f"kStackBytes = {emulator.STACK_KIB} * 1024;" in emulator.header_text()


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own report")
def test_dynamic_shared_memory_is_bounded_by_the_launchs_bytes():
    out = np.zeros(4, np.float32)
    kernel = load_kernel(LEARNER, "dynamic_shared")
    kernel((1,), (4,), (out, np.int32(63)), shared_mem=256)  # the last float: fine
    assert (out == 1).all()
    with pytest.raises(LaunchError, match=r"wrote past the end of the dynamic shared memory "
                                          r"\(extern __shared__\): the launch gave 256 bytes"):
        kernel((1,), (4,), (out, np.int32(64)), shared_mem=256)
    with pytest.raises(LaunchError, match=r"the launch gave 0 bytes \(shared_mem= of the launch, "
                                          r"which was not given\)"):
        kernel((1,), (4,), (out, np.int32(0)))


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's report (a GPU may run on silently)")
@pytest.mark.parametrize("name, index, shared_mem, what", [
    ("dynamic_shared", 5000, 256, r"wrote past the end of the dynamic shared memory \(extern "
                                  r"__shared__\): the launch gave 256 bytes"),
    ("dynamic_pointer_before", 5000, 128, r"wrote before the start of the dynamic shared memory "
                                          r"\(extern __shared__\), of which the launch gave 128 bytes"),
    ("dynamic_shared", -1, 0, r"wrote before the start of the dynamic shared memory \(extern "
                              r"__shared__\), of which the launch gave 0 bytes \(shared_mem= of the "
                              r"launch, which was not given\)"),
    ("shared_pointer_before", 5000, 0, r"wrote before the start of the __shared__ array s "
                                       r"\(float\[32\]\), through a pointer taken from it")])
def test_shared_memory_far_past_its_end_or_before_its_start_is_named(name, index, shared_mem, what):
    """Pages away from the bytes (up to a MiB each way), not only in the page after them; these
    were silent, or blamed on an array argument."""
    out = np.zeros(32, np.float32)
    with pytest.raises(LaunchError, match=rf"{name}: block \(0, 0, 0\), thread \(\d+, 0, 0\): {what}"):
        load_kernel(LEARNER, name)((1,), (32 if "before" in name else 4,), (out, np.int32(index)),
                                   shared_mem=shared_mem)


@pytest.mark.skipif(BACKEND != "cpu", reason="CuPy passes device pointers; this is the emulator's copy")
def test_overlapping_views_of_one_array_share_its_memory():
    """x = a[:10] and y = a[5:15] are one memory, as on a GPU: y[i] += x[i] for i < 5 reads
    a[0:5] and writes a[5:10]. (Copied each on its own, x's copy back -- it is not const --
    overwrote what the kernel wrote through y.)"""
    a = np.arange(15, dtype=np.float32)
    load_kernel(LEARNER, "shifted_add")((1,), (32,), (a[:10], a[5:15], np.int32(5)))
    expect = np.arange(15, dtype=np.float32)
    expect[5:10] += np.arange(5)
    np.testing.assert_array_equal(a, expect)


def test_shared_arrays_in_every_declaration_form_work():
    out = xp.zeros(2, dtype=xp.float32)
    load_kernel(LEARNER, "shared_forms")((1,), (32,), (out, np.int32(0)))
    assert list(to_host(out)) == [11.0, 2.0]


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own check")
def test_shared_arrays_in_every_declaration_form_are_checked():
    """Bs is the second array of `__shared__ float As[4][8], Bs[4][8];` on the line of {: its
    index 32 (row 4 of 4) is reported, not read from the emulator's own memory."""
    out = np.zeros(2, np.float32)
    with pytest.raises(LaunchError, match=r"index 4 of __shared__ Bs is out of bounds: Bs is "
                                          r"float\[4\]\[8\]"):
        load_kernel(LEARNER, "shared_forms")((1,), (32,), (out, np.int32(32)))


@pytest.mark.parametrize("check", ["0", "1"])
def test_shared_memory_written_through_a_pointer_then_read_by_index(check, monkeypatch):
    """In check mode too: the float4 stores through &s[0] are not tracked, so the reads by index
    after them must not be reported as reads of unwritten memory (they were)."""
    monkeypatch.setenv("BOOK_EMU_CHECK", check)
    out = xp.zeros(32, dtype=xp.float32)
    load_kernel(LEARNER, "shared_through_pointer")((1,), (32,), (out,))
    assert (to_host(out) == 5.0).all()


def test_a_shared_array_or_row_cast_to_float4_as_it_is():
    """reinterpret_cast<float4*>(s) of a __shared__ array, and of a row t[1], without &s[0]
    (the emulator refused them with a C++ error about its own types)."""
    out = xp.zeros(32, dtype=xp.float32)
    load_kernel(LEARNER, "shared_cast_whole")((1,), (32,), (out, np.int32(0)))
    np.testing.assert_array_equal(to_host(out), 5.0 + 16 + 4 * (np.arange(32) % 4))


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's message (a GPU writes past it silently)")
def test_a_float4_cast_of_a_shared_array_past_its_end_is_named():
    out = xp.zeros(32, dtype=xp.float32)
    with pytest.raises(LaunchError, match=r"thread \(0, 0, 0\): wrote past the end of the __shared__ "
                                          r"array s \(float\[128\]\), through a pointer taken from it"):
        load_kernel(LEARNER, "shared_cast_whole")((1,), (32,), (out, np.int32(100)))


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own message")
def test_a_cuda_library_header_is_named_as_unsupported(tmp_path):
    """cuda_fp16.h's and cuda_bf16.h's types are there (test_halves.py, test_builtins_16bit.py);
    cuda_fp8.h's are not, and the header is named."""
    src = tmp_path / "fp8.cu"
    src.write_text('#include <cuda_fp8.h>\nextern "C" __global__ void fp8(float* y) {\n'
                   '    y[threadIdx.x] = float(__nv_fp8_e4m3(y[threadIdx.x]));\n}\n')
    from book.launch.runtime import KernelCompileError
    with pytest.raises(KernelCompileError, match=r"fp8.cu includes cuda_fp8.h, a CUDA library "
                                                 r"header the CPU emulator does not provide"):
        load_kernel(src, "fp8")


def test_atomic_inc_and_dec_wrap_at_the_limit():
    """10 increments with limit 4 from 0 end at 0 (4 wraps to 0); 10 decrements from 0 end at 0
    (0 wraps to the limit 4, then counts down: 4 3 2 1 0 4 3 2 1 0)."""
    c = xp.zeros(2, dtype=xp.uint32)
    load_kernel(LEARNER, "wrap_counters")((1,), (10,), (c,))
    assert list(to_host(c)) == [0, 0]


def test_a_shared_row_passes_as_a_pointer_or_an_array():
    out = xp.zeros(32, dtype=xp.float32)
    load_kernel(LEARNER, "shared_rows")((1,), (32,), (out,))
    assert np.all(to_host(out) == 5 + 10 + 12 + 11)


def test_products_below_the_normal_range_are_kept_not_flushed():
    """The book builds its GPU kernels with -ftz=false (CuPy's RawModule would append
    -ftz=true): 1e-20 * 1e-20 is 1e-40, a subnormal, on both backends."""
    a = xp.full(4, 1e-20, dtype=xp.float32)
    c = xp.zeros(4, dtype=xp.float32)
    load_kernel(LEARNER, "tiny_product")((1,), (4,), (a, a, c))
    assert np.allclose(to_host(c), np.float32(1e-20) * np.float32(1e-20), rtol=1e-3)
    assert (to_host(c) > 0).all()


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own report (a GPU may not fault)")
def test_a_pointer_past_a_shared_array_is_named():
    """Indexes are checked; a pointer from &tile[0][0] is not, so the array ends at a guard page
    and the fault names it. Within the array (n = 32 * 33) the same kernel runs."""
    out = xp.zeros(32, dtype=xp.float32)
    load_kernel(LEARNER, "shared_pointer_overrun")((1,), (32,), (out, np.int32(32 * 33)))
    assert (to_host(out) == 1).all()
    with pytest.raises(LaunchError, match=r"wrote past the end of the __shared__ array "
                                          r"tile \(float\[32\]\[33\]\), through a pointer"):
        load_kernel(LEARNER, "shared_pointer_overrun")((1,), (32,), (out, np.int32(32 * 33 + 4096)))


@pytest.mark.parametrize("n", [64, 63, 61])
def test_float4_reads_aligned_from_an_arrays_start_run_whatever_its_size(n):
    """Offsets that are multiples of 4 floats from the array's start are aligned on a GPU (its
    arrays start on 256 bytes), whatever the array's length; the emulator agrees."""
    x, out = np.arange(n, dtype=np.float32), xp.zeros(2, dtype=xp.float32)
    load_kernel(LEARNER, "misaligned")((1,), (2,), (to_device(x), out, np.int32(4)))
    assert list(to_host(out)) == [x[4:8].sum(), x[8:12].sum()]


@pytest.mark.skipif(BACKEND != "cpu", reason="on a GPU a misaligned address ends the CUDA context")
def test_a_misaligned_float4_is_named_as_the_gpu_names_it():
    x, out = np.arange(64, dtype=np.float32), np.zeros(8, np.float32)
    with pytest.raises(LaunchError, match=r"misaligned: block \(0, 0, 0\), thread \(0, 0, 0\): "
                                          r"misaligned address: the reinterpret_cast to float4\* "
                                          r"on line \d+ gives an address 4 bytes past a 16-byte "
                                          r"boundary.*i must be a multiple of 4"):
        load_kernel(LEARNER, "misaligned")((1,), (8,), (x, out, np.int32(1)))


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own report")
@pytest.mark.parametrize("name, shared_mem, what", [
    ("shared_pointer_before", 0, r"the __shared__ array s \(float\[32\]\)"),
    ("dynamic_pointer_before", 128, r"the dynamic shared memory \(extern __shared__\)")])
def test_a_pointer_run_before_a_shared_array_is_named(name, shared_mem, what):
    """Written through a pointer to 3 floats before the start: found when the block ends (as a
    global array's write before its start is found when the launch ends), and the next launch
    of the same kernel, right, runs clean."""
    out = np.zeros(32, np.float32)
    kernel = load_kernel(LEARNER, name)
    with pytest.raises(LaunchError, match=rf"{name}: block \(\d, 0, 0\): wrote 12 bytes before the "
                                          rf"start of {what}, through a pointer taken from it.*"
                                          r"found when the block ended"):
        kernel((2,), (32,), (out, np.int32(3)), shared_mem=shared_mem)
    kernel((2,), (32,), (out, np.int32(0)), shared_mem=shared_mem)
    assert (out == 1.0).all()


def test_loads_and_stores_with_cache_hints():
    x = np.arange(100, dtype=np.float32)
    out = xp.zeros(400, dtype=xp.float32)
    load_kernel(LEARNER, "cache_hints")((1,), (128,), (to_device(x), out, np.int32(100)))
    assert np.array_equal(to_host(out).reshape(100, 4), 6 * x[:, None] * np.arange(1, 5, dtype=np.float32))


@pytest.mark.skipif(device_cc() < (8, 0), reason="__reduce_*_sync needs compute capability 8.0")
def test_warp_reductions_over_a_full_and_a_partial_mask():
    rng = np.random.default_rng(4)
    x = rng.integers(-2**31, 2**31, 128, dtype=np.int64).astype(np.int32)
    out = xp.zeros(24, dtype=xp.int32)
    load_kernel(LEARNER, "warp_reductions")((1,), (128,), (to_device(x), out))
    got = to_host(out).reshape(4, 6)
    for w in range(4):
        v = x[32 * w: 32 * w + 32][::2 if w % 2 else 1]
        u = v.view(np.uint32)
        want = [np.int32(np.uint32(u.astype(np.uint64).sum() % 2**32).view(np.int32)), v.min(), v.max(),
                u.min().view(np.int32), np.bitwise_and.reduce(u).view(np.int32),
                np.bitwise_or.reduce(u).view(np.int32)]
        assert list(got[w]) == [int(a) for a in want], w


@pytest.mark.skipif(BACKEND != "cpu", reason="on a GPU the block hangs")
@pytest.mark.parametrize("name", ["barrier_against_spin", "barrier_against_spin_array"])
def test_a_barrier_that_spinning_threads_never_reach_is_named_at_the_time_limit(name):
    """Half a block at __syncthreads() while the other half spins on a flag the first half sets
    after it (a volatile __shared__ scalar, or an element of a volatile __shared__ array: both
    stay volatile, so the loop is not optimized away): stopped by the time limit, whose message
    says who waited where and who ran."""
    out = np.zeros(32, np.int32)
    with pytest.raises(LaunchError, match=r"the launch ran for 1 s, the emulator's limit.*When it "
                                          r"was stopped, 16 threads of block \(0, 0, 0\) waited at "
                                          r"the __syncthreads\(\) on line \d+ while thread "
                                          r"\(16, 0, 0\) ran"):
        load_kernel(LEARNER, name)((1,), (32,), (out,), timeout_s=1)
    still = np.zeros(4, np.float32)  # and the next launch runs
    load_kernel(LEARNER, "dynamic_shared")((1,), (4,), (still, np.int32(3)), shared_mem=64)
    assert (still == 1).all()


@pytest.mark.skipif(BACKEND != "cpu", reason="on a GPU the block hangs")
def test_the_stuck_block_is_named_while_others_run_on_several_workers(monkeypatch):
    """Block 0 deadlocks while block 1, on another worker thread, runs through barriers: the
    message names block 0 (the worker that stopped switching), not the busy one."""
    monkeypatch.setenv("BOOK_CPU_THREADS", "2")
    out = np.zeros(64, np.int32)
    with pytest.raises(LaunchError, match=r"When it was stopped, 16 threads of block \(0, 0, 0\) "
                                          r"waited at the __syncthreads\(\) on line \d+ while "
                                          r"thread \(16, 0, 0\) ran and did not come back"):
        load_kernel(LEARNER, "one_block_hangs_one_runs")((2,), (32,), (out,), timeout_s=2)


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's time limit")
def test_a_slow_kernel_with_barriers_is_not_called_a_deadlock():
    out = np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match=r"the launch ran for 1 s, the emulator's limit") as e:
        load_kernel(LEARNER, "slow_with_barriers")((1,), (64,), (out,), timeout_s=1)
    assert "When it was stopped" not in str(e.value)


def test_a_source_saved_with_a_byte_order_mark_compiles(tmp_path):
    """An editor on Windows may save UTF-8 with a BOM: it once gave 'unrecognized token' at line 1."""
    src = tmp_path / "bom.cu"
    src.write_bytes(b"\xef\xbb\xbf" + b'extern "C" __global__ void twice(float* y) {\n'
                    b"    y[threadIdx.x] *= 2.0f;\n}\n")
    y = to_device(np.arange(32, dtype=np.float32))
    load_kernel(src, "twice")(1, 32, (y,))
    assert to_host(y).tolist() == [2.0 * i for i in range(32)]


def test_helper_math_s_lerp_and_clamp_compile(tmp_path):
    """The CUDA samples' helper_math.h defines lerp and clamp at global scope: the emulator once
    refused lerp ('conflicts with std::lerp', which libstdc++'s math.h puts there)."""
    src = tmp_path / "helper.cu"
    src.write_text("inline __host__ __device__ float lerp(float a, float b, float t) { return a + t * (b - a); }\n"
                   "inline __host__ __device__ float clamp(float f, float a, float b) "
                   "{ return fmaxf(a, fminf(f, b)); }\n"
                   'extern "C" __global__ void mix(float* y) {\n'
                   "    y[threadIdx.x] = lerp(0.0f, 2.0f, 0.25f) + clamp(5.0f, 0.0f, 1.0f);\n}\n")
    y = xp.zeros(32, dtype=xp.float32)
    load_kernel(src, "mix")(1, 32, (y,))
    assert (to_host(y) == 1.5).all()


def test_math_constants_without_an_include_compile_as_under_nvcc(tmp_path):
    """INFINITY, NAN and M_PI come with nvcc's own includes; NVRTC has no math.h: the book
    defines them for it, so a kernel written for nvcc compiles on both backends."""
    import numpy as np
    from book import load_kernel, to_device, to_host
    src = tmp_path / "consts.cu"
    src.write_text('extern "C" __global__ void k(float* out) {\n'
                   '    out[0] = INFINITY; out[1] = -INFINITY; out[2] = NAN; out[3] = (float)M_PI;\n'
                   '    out[4] = HUGE_VALF; out[5] = (float)M_SQRT2;\n}\n')
    out = to_device(np.zeros(6, np.float32))
    load_kernel(src, "k")(1, 1, (out,))
    out = to_host(out)
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2]) and out[4] == np.inf
    assert out[3] == np.float32(np.pi) and out[5] == np.float32(np.sqrt(2))


def test_cucomplex_h_compiles_and_takes_complex_arrays(tmp_path):
    """cuComplex.h (the CUDA toolkit's, from the runtime wheel requirements.txt installs):
    NVRTC reads it from the toolkit's folder, the emulator its text with cuda_emu.h's float2;
    a cuFloatComplex* takes a complex64 array, and is bounds-checked in its elements."""
    import numpy as np
    from book import LaunchError, load_kernel, to_device, to_host
    from book.launch import cuda_source
    if cuda_source.cuda_include_dir() is None:
        pytest.skip("no CUDA toolkit headers here")
    src = tmp_path / "cmul.cu"
    src.write_text('#include <cuComplex.h>\n'
                   'extern "C" __global__ void cmul(const cuFloatComplex* a, const cuFloatComplex* b,\n'
                   '                                cuFloatComplex* c, int n) {\n'
                   '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
                   '    if (i < n) c[i] = cuCaddf(cuCmulf(a[i], b[i]), make_cuFloatComplex(0.f, cuCabsf(a[i])));\n'
                   '}\n')
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(40) + 1j * rng.standard_normal(40)).astype(np.complex64).reshape(2, 20)
    c = to_device(np.zeros(20, np.complex64))
    k = load_kernel(src, "cmul")
    k(1, 32, (to_device(a), to_device(b), c, np.int32(20)))
    np.testing.assert_allclose(to_host(c), a * b + 1j * np.abs(a), rtol=1e-5, atol=1e-6)
    with pytest.raises(LaunchError, match="expects a float32 array, got float64"):
        k(1, 32, (to_device(a), to_device(b), to_device(np.zeros(20)), np.int32(20)))


@pytest.mark.parametrize("text, name, says", [
    ('__global__ void add(float* x) { x[threadIdx.x] += 1; }\n'
     'int main() { float* d; cudaMalloc(&d, 400); add<<<1, 100>>>(d); cudaDeviceSynchronize(); }\n',
     "add", r"holds host code .* to_device for cudaMalloc"),
    ('__global__ void child(float* x) { x[threadIdx.x] = 1; }\n'
     'extern "C" __global__ void parent(float* x) { if (threadIdx.x == 0) child<<<1, 32>>>(x); }\n',
     "parent", r"launches a kernel \(dynamic parallelism\) .* launch the second kernel from Python"),
    ('template <typename T, int N> __global__ void reduce(T* x) { x[threadIdx.x % N] = 0; }\n',
     "reduce<float, N>", r"reduce<float, N>, is NVRTC's name expression: .* 256, not N"),
])
def test_whole_programs_device_launches_and_misspelt_instances_say_what_to_do(tmp_path, text, name, says):
    """What NVRTC says of a tutorial's whole file (main, cudaMalloc), of a kernel launching a
    kernel, and of a template instance it cannot parse, with the way around added."""
    from book import load_kernel
    from book.launch.runtime import KernelCompileError
    src = tmp_path / "k.cu"
    src.write_text(text)
    with pytest.raises(KernelCompileError, match=says):
        load_kernel(src, name)


def test_end_pointers_of_arguments_and_shared_arrays_are_legal_addresses():
    """&x[n] and &s[64], one past the end, as a loop's end: legal C++ a GPU runs. The index checks
    once refused them as if the element were read."""
    x = np.arange(20, dtype=np.float32)
    out = xp.zeros(3, dtype=xp.float32)
    load_kernel(LEARNER, "segment_sums")(1, 32, (to_device(x), to_device(np.array([0, 5, 12], np.int32)),
                                                  out, np.int32(3), np.int32(20)))
    assert to_host(out).tolist() == [x[:5].sum(), x[5:12].sum(), x[12:].sum()]
    out = xp.zeros(5, dtype=xp.float32)
    load_kernel(LEARNER, "shared_end_pointers")(1, 64, (to_device(np.arange(64, dtype=np.float32)), out))
    assert to_host(out).tolist() == [2016.0] + [float(np.arange(16 * r, 16 * r + 16).sum()) for r in range(4)]


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own check (a GPU reads on silently)")
def test_a_binary_and_is_not_taken_for_an_address():
    """0xff & x[i + 1] reads x[i + 1]: past the end at the last thread, as before."""
    with pytest.raises(LaunchError, match=r"x\[i \+ 1\] on line \d+ is element 32 of `x` "
                                          r"\(32 elements of 4 bytes\): 1 past its end"):
        load_kernel(LEARNER, "masked_next")(1, 32, (to_device(np.arange(32, dtype=np.int32)),
                                                     xp.zeros(32, dtype=xp.int32), np.int32(32)))


def test_helper_math_operators_compile_beside_a_device_variable():
    """operator+=(float3&, float3), as helper_math.h defines it, was once read as a __device__
    variable named operator (an export that did not compile)."""
    y = xp.zeros(4, dtype=xp.float32)
    load_kernel(LEARNER, "add_offsets")(1, 4, (to_device(np.array([1, 1, 1], np.float32)), y))
    assert to_host(y).tolist() == [15.0] * 4


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own check (a GPU goes on silently)")
@pytest.mark.parametrize("name, threads, args, message", [
    ("local_histogram", 8, lambda: (np.r_[np.zeros(40, np.int32), [4], np.zeros(23, np.int32)].astype(np.int32),
                                 np.zeros(8, np.int32), np.int32(8)),
     r"thread \(5, 0, 0\): index 4 is out of bounds for an array of type 'int \[4\]' "
     r"\(learner.cu, line {the local histogram}\): a local array, or an array member of a struct"),
    ("fill_tile", 33, lambda: (np.ones(33, np.float32), np.zeros(1, np.float32)),
     r"thread \(32, 0, 0\): index 32 is out of bounds for an array of type 'float \[32\]' "
     r"\(learner.cu, line {the member's fill}\)"),
    ("buckets", 8, lambda: (np.arange(8, dtype=np.int64), np.zeros(8, np.int32), np.int64(0), np.int32(8)),
     r"integer division by zero: a / or % of 'long long int' by 0 \(learner.cu, line {the modulus}\)"),
])
def test_check_mode_stops_undefined_behaviour_at_its_line(check_mode, name, threads, args, message):
    """A local or member array indexed past its end, an integer division by zero: C++ leaves them
    undefined and a GPU goes on silently (or with any value); the check mode's build stops at the
    line (-fsanitize=bounds,integer-divide-by-zero, bound to the emulator's handlers)."""
    from book.launch import emulator
    if not emulator._ub_check():
        pytest.skip("the C++ compiler builds without -fsanitize (zig)")
    marker = re.search(r"\{(.+?)\}", message).group(1)
    with pytest.raises(LaunchError, match=message.replace("{" + marker + "}", str(line_of(LEARNER, marker)))):
        load_kernel(LEARNER, name)(1, threads, args())


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own check (a GPU faults with no line)")
def test_a_null_pointer_is_named_with_its_line():
    with pytest.raises(LaunchError, match=(
            rf"dst\[i\] on line {line_of(LEARNER, 'the null write')} goes through a null pointer "
            r"\(address 0x0\): it was never set to an array")):
        load_kernel(LEARNER, "pick_output")(1, 8, (np.zeros(8, np.float32), np.zeros(8, np.float32),
                                                   np.int32(2), np.int32(8)))


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own check (a GPU reads on silently)")
def test_ldg_of_one_past_the_end_is_a_read_past_the_end():
    """&x[n] is a legal address, but __ldg(&x[n]) reads it."""
    with pytest.raises(LaunchError, match=(
            rf"x\[i \+ 1\] on line {line_of(LEARNER, 'the __ldg')} is element 16 of `x` "
            r"\(16 elements of 4 bytes\): 1 past its end")):
        load_kernel(LEARNER, "forward_difference")(1, 16, (np.arange(16, dtype=np.float32),
                                                           np.zeros(16, np.float32), np.int32(16)))


@pytest.mark.skipif(BACKEND != "cpu", reason="on a GPU a misaligned address ends the CUDA context")
def test_a_misaligned_half2_says_which_index_of_a_half_array_is_aligned():
    with pytest.raises(LaunchError, match=(
            rf"the reinterpret_cast to __half2\* on line {line_of(LEARNER, 'the half2 cast')} gives "
            r"an address 2 bytes past a 4-byte boundary .* The operand points to elements of 2 "
            r"bytes: to cast &x\[i\] so, i must be a multiple of 2\.")):
        load_kernel(LEARNER, "half_pair_sums")(1, 4, (np.ones(9, np.float16), np.zeros(4, np.float32),
                                                      np.int32(4)))


@pytest.mark.parametrize("check", ["0", "1"])
def test_a_spin_lock_orders_the_updates_it_guards(monkeypatch, check):
    """CUDA by Example's lock (atomicCAS to take it, atomicExch to give it back) around a plain
    `total += sum`, one thread a block: legal, and no lost update in check mode."""
    monkeypatch.setenv("BOOK_EMU_CHECK", check)
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    total, mutex = xp.zeros(1, dtype=xp.float32), xp.zeros(1, dtype=xp.int32)
    load_kernel(LEARNER, "locked_total")(5, 64, (to_device(x), total, mutex, np.int32(300)))
    assert abs(float(to_host(total)[0]) - float(x.astype(np.float64).sum())) < 1e-4


def test_bfloat16_arrays_are_passed_as_their_bits():
    """__nv_bfloat16* takes a NumPy uint16 array (bfloat16's bits: NumPy has no bfloat16)."""
    def bf16(a):  # round to nearest even, as __float2bfloat16 does
        u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    x, y = np.linspace(-2, 2, 40, dtype=np.float32), np.linspace(1, 3, 40, dtype=np.float32)
    yb = to_device(bf16(y))
    load_kernel(LEARNER, "bf16_axpy")(1, 64, (to_device(bf16(x)), yb, np.float32(0.5), np.int32(40)))
    as_float = lambda b: (b.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    want = bf16(0.5 * as_float(bf16(x)) + as_float(bf16(y)))
    np.testing.assert_array_equal(to_host(yb), want)


COOPERATIVE = ROOT / "tests" / "kernels" / "cooperative.cu"


def test_cooperative_groups_block_tiles_and_coalesced_groups():
    """cooperative_groups.h's block and warp groups: NVRTC finds the header among the CUDA
    toolkit's (as cuda_fp16.h); the emulator has them on its barriers and warp operations."""
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    total = xp.zeros(1, dtype=xp.float32)
    load_kernel(COOPERATIVE, "tile_sums")(4, 256, (to_device(x), total, np.int32(1000)))
    assert abs(float(to_host(total)[0]) - float(x.astype(np.float64).sum())) < 1e-3
    v = np.random.default_rng(2).integers(-100, 100, 64).astype(np.int32)
    out, rank = xp.zeros(8, dtype=xp.int32), xp.zeros(64, dtype=xp.int32)
    load_kernel(COOPERATIVE, "tile_max")(1, 64, (to_device(v), out, rank))
    assert to_host(out).tolist() == v.reshape(8, 8).max(axis=1).tolist()
    assert to_host(rank).tolist() == [t % 8 + 100 * (t // 8) for t in range(64)]
    v = np.random.default_rng(3).integers(-5, 5, 128).astype(np.int32)
    out, count = xp.zeros(128, dtype=xp.int32), xp.zeros(1, dtype=xp.int32)
    load_kernel(COOPERATIVE, "append_positive")(2, 64, (to_device(v), out, count))
    n = int(to_host(count)[0])
    assert n == (v > 0).sum() and sorted(to_host(out)[:n].tolist()) == sorted(v[v > 0].tolist())


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own message (a GPU refuses the launch)")
def test_a_grid_barrier_names_the_cooperative_launch_it_needs():
    line = line_of(COOPERATIVE, "the grid's barrier")
    with pytest.raises(LaunchError, match=rf"grid.sync\(\) on line {line}: a grid-wide barrier needs a "
                                          r"cooperative launch"):
        load_kernel(COOPERATIVE, "grid_barrier")(2, 32, (xp.zeros(2, dtype=xp.float32),))


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own report")
def test_a_stack_overflow_at_a_call_is_named():
    """The fault of a call's push of its return address, with the stack pointer still at the top
    of the guard page, was once named a bad pointer."""
    with pytest.raises(LaunchError, match=r"recursive_total: .*: stack overflow: the thread used more "
                                          r"than the emulator's 256 KiB of stack"):
        load_kernel(LEARNER, "recursive_total")(1, 1, (np.ones(100_000, np.float32),
                                                       np.zeros(1, np.float32), np.int32(100_000)))


def test_libcudacxx_runs_on_a_gpu_and_is_named_by_the_emulator():
    source = ROOT / "tests" / "kernels" / "libcudacxx.cu"
    out = xp.zeros(2, dtype=xp.int32)
    if BACKEND == "cpu":
        from book import KernelCompileError
        with pytest.raises(KernelCompileError, match=r"libcudacxx.cu includes cuda/std/limits, a CUDA library "
                                            r"header the CPU emulator does not provide"):
            load_kernel(source, "int_limits")(1, 1, (out,))
        return
    load_kernel(source, "int_limits")(1, 1, (out,))
    assert to_host(out).tolist() == [2**31 - 1, -2**31]
