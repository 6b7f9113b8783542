"""__shared__ memory as a GPU has it (tests/kernels/shared_semantics.cu): elements are lvalues of
their own type; volatile warp-synchronous code and spin-waits between warps give a GPU's
answers; warp matches; line numbers after a multi-line declaration. The legal kernels run on
either backend (a GPU gives the same answers); the check mode's reports (BOOK_EMU_CHECK=1) are
the emulator's own."""
import re

import numpy as np
import pytest

from book import BACKEND, LaunchError, load_kernel, to_device, to_host, xp
from conftest import ROOT, line_of

SOURCE = ROOT / "tests" / "kernels" / "shared_semantics.cu"
emulator_only = pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's own report")


def kernel(name):
    return load_kernel(SOURCE, name)


# ---- 1. elements are lvalues of their own type --------------------------------------------------

def run_lvalues():
    out = xp.full(32 * 10, -1, dtype=xp.float32)
    bits = xp.zeros(64, dtype=xp.int32)
    sizes = xp.zeros(9, dtype=xp.uint32)
    kernel("shared_lvalues")((1,), (32,), (out, bits, sizes))
    return to_host(out).reshape(32, 10), to_host(bits).reshape(32, 2), to_host(sizes)


def check_lvalues(out, bits, sizes):
    t = np.arange(32, dtype=np.float32)
    s = t + 11  # s[t] = t, then += 1 through a reference, then += 10 in bump(float&)
    want = np.stack([t, s, t + 0.5 + 2 * t, 2 * s, np.maximum(s, 20), np.full(32, 11),
                     [sum(range(8 * (i % 4), 8 * (i % 4) + 8)) for i in range(32)],
                     np.full(32, 11), np.full(32, 4), np.full(32, 32)], axis=1)
    np.testing.assert_array_equal(out, want)
    old = (((np.arange(32) + 1) | 0x100) << 1) - 1
    np.testing.assert_array_equal(bits, np.stack([old, old + 1], axis=1))
    assert list(sizes) == [128, 4, 32, 128, 32, 256, 8, 4, 4]


def test_shared_elements_are_lvalues_of_their_own_type():
    """auto copies, references (float&, Point&, a function's float&), struct members, ++ |= <<=,
    atomics on elements, templates (max, a shuffle, twice(T), first_of(const T*)), a row passed as
    a pointer, range-for over a row, memset(bins, 0, sizeof bins), and sizeof as on a GPU."""
    check_lvalues(*run_lvalues())


@emulator_only
def test_the_same_in_check_mode(check_mode):
    """In check mode the elements are tracked through proxies; `auto` still copies the value,
    and the kernel is clean."""
    check_lvalues(*run_lvalues())


# ---- 2. warp-synchronous code ----------------------------------------------------------------

def test_the_legacy_warp_synchronous_reduction_gives_the_sum():
    """The classic reduction's last warp on volatile shared memory with no __syncwarp(): its
    lanes advance in lockstep, as a converged warp runs it (the emulator once ran each lane to
    the end alone: a wrong sum, silently)."""
    x = np.random.default_rng(1).integers(-50, 50, 4 * 256).astype(np.float32)  # exact sums
    out = xp.zeros(4, dtype=xp.float32)
    kernel("reduce_legacy")((4,), (256,), (to_device(x), out))
    np.testing.assert_array_equal(to_host(out), x.reshape(4, 256).sum(axis=1))
    out = xp.zeros(4, dtype=xp.float32)
    kernel("reduce_syncwarp")((4,), (256,), (to_device(x), out))
    np.testing.assert_array_equal(to_host(out), x.reshape(4, 256).sum(axis=1))


def test_the_other_legacy_forms_give_the_sum():
    """A template warp_reduce(volatile T*) on dynamic shared memory, a volatile local pointer,
    and a volatile __shared__ array indexed directly."""
    x = np.random.default_rng(2).integers(-1000, 1000, 3 * 64).astype(np.int32)
    out = xp.zeros(6, dtype=xp.int32)
    kernel("reduce_legacy_forms")((3,), (64,), (to_device(x), out), shared_mem=64 * 4)
    sums = x.reshape(3, 64).sum(axis=1)
    np.testing.assert_array_equal(to_host(out).reshape(3, 2), np.stack([sums, sums], axis=1))


@pytest.mark.parametrize("how", [0, 1, 2], ids=["volatile_shared", "volatile_global", "fence"])
def test_a_spin_wait_between_warps_ends(how):
    """Warp 0 waits for warp 1 (the emulator once ran warp 0's spin until the time limit)."""
    flag, out = xp.zeros(1, dtype=xp.int32), xp.zeros(2, dtype=xp.int32)
    kernel("spin_wait")((1,), (64,), (flag, out, np.int32(how)), timeout_s=20)
    assert list(to_host(out)) == [42, 42]


@emulator_only
def test_a_spin_wait_that_nothing_ends_stops_at_the_time_limit():
    with pytest.raises(LaunchError, match=r"spin_forever: the launch ran for 1 s, the emulator's "
                                          r"limit, and was stopped"):
        kernel("spin_forever")((1,), (64,), (np.zeros(64, np.int32),), timeout_s=1)


@emulator_only
def test_check_mode_names_the_pre_volta_assumption(check_mode):
    x = np.ones(256, np.float32)
    with pytest.raises(LaunchError, match=(
            r"reduce_legacy: block \(0, 0, 0\), thread \(0, 0, 0\): race on shared memory: this "
            r"thread reads sdata\[16\], which thread \(16, 0, 0\) wrote with no __syncthreads\(\) "
            r"between them.*Both are lanes of warp 0, and since Volta \(independent thread "
            r"scheduling\) the lanes of a warp do not run in lockstep.*Put __syncwarp\(\) between "
            r"its steps")):
        kernel("reduce_legacy")((1,), (256,), (x, np.zeros(1, np.float32)))
    out = np.zeros(1, np.float32)
    kernel("reduce_syncwarp")((1,), (256,), (x, out))  # the same with __syncwarp(): clean
    assert out[0] == 256


@emulator_only
def test_check_mode_allows_a_volatile_flag_between_warps(check_mode):
    out = np.zeros(2, np.int32)
    kernel("spin_wait")((1,), (64,), (np.zeros(1, np.int32), out, np.int32(0)))
    assert list(out) == [42, 42]


# ---- 3. check mode: shared scalars and dynamic shared memory -------------------------------------

@emulator_only
def test_check_mode_finds_a_race_on_a_shared_scalar(check_mode):
    """Named with its line, as an element's race is (rewrite.py's _scalar_lines)."""
    line = line_of(SOURCE, "// scalar update")
    with pytest.raises(LaunchError, match=(
            r"scalar_race: block \(0, 0, 0\), thread \(1, 0, 0\): lost update on shared memory: "
            r"this thread's \+= of sum \(a read, then a write\) follows thread \(0, 0, 0\)'s write "
            rf"of it with neither a barrier nor an atomic between them \(line {line}\): .* Make it an atomic "
            r"\(atomicAdd\(&x, 1\) for x\+\+")):
        kernel("scalar_race")((1,), (64,), (np.ones(64, np.float32), np.zeros(1, np.float32)))


@emulator_only
def test_check_mode_names_a_plain_count_in_shared_memory_a_lost_update(check_mode):
    """s[bin] += 1 by threads that share a bin: the way out is an atomic, not a barrier."""
    x, bins = np.arange(64, dtype=np.int32), np.zeros(16, np.int32)
    with pytest.raises(LaunchError, match=(
            r"shared_histogram_plain: block \(0, 0, 0\), thread \(16, 0, 0\): lost update on shared "
            r"memory: this thread's \+= of s\[0\] \(a read, then a write\) follows thread "
            rf"\(0, 0, 0\)'s write of it .* \(line {line_of(SOURCE, 'the plain count')}\): on a GPU")):
        kernel("shared_histogram_plain")((1,), (64,), (x, bins))


@emulator_only
def test_check_mode_finds_a_write_after_another_threads_read(check_mode):
    """s[t] += s[t + k] with no barrier: thread 0 ran its whole loop first, reading s[1]; thread
    1's own read of s[1] must not hide that read from its write just after."""
    with pytest.raises(LaunchError, match=(
            r"reduce_no_barrier: block \(0, 0, 0\), thread \(1, 0, 0\): race on shared memory: "
            r"this thread writes s\[1\], which thread \(0, 0, 0\) read with no __syncthreads\(\)")):
        kernel("reduce_no_barrier")((1,), (64,), (np.ones(64, np.int32), np.zeros(1, np.int32)))


def run_neighbours(sync, i=0, shared_mem=64 * 4):
    out = xp.full(64, -1, dtype=xp.float32)
    kernel("dynamic_neighbours")((1,), (64,), (out, np.int32(sync), np.int32(i)),
                                 shared_mem=shared_mem)
    return to_host(out)


def test_two_extern_declarations_share_the_dynamic_memory():
    np.testing.assert_array_equal(run_neighbours(1), np.maximum(np.arange(64) - 1, 0))


@emulator_only
def test_check_mode_tracks_dynamic_shared_memory_by_word(check_mode):
    """Written as fbuf (float), read as ibuf (int): one bookkeeping for both."""
    np.testing.assert_array_equal(run_neighbours(1), np.maximum(np.arange(64) - 1, 0))
    with pytest.raises(LaunchError, match=(
            r"dynamic_neighbours: block \(0, 0, 0\), thread \(1, 0, 0\): race on shared memory: "
            r"this thread reads ibuf\[0\], which thread \(0, 0, 0\) wrote with no "
            r"__syncthreads\(\) between them")):
        run_neighbours(0)
    with pytest.raises(LaunchError, match=(
            rf"index 64 of extern __shared__ fbuf is out of bounds: the launch gave 256 bytes of "
            rf"dynamic shared memory \(shared_mem=\), 64 elements of float, on line "
            rf"{line_of(SOURCE, '__float_as_int(fbuf[i])')}")):
        run_neighbours(1, i=64)


# ---- 4. warp matches ---------------------------------------------------------------------------

def test_match_any_and_match_all():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 4, 64).astype(np.int32)
    keys[32:48] = 7          # warp 1's low half: one value (match_all of the half is true)
    keys[40] = 1000 + 7      # ... but warp 1 is not all below 1000
    keys[48:] = 2 * rng.integers(0, 3, 16)  # warp 1's high half: all even
    out = xp.zeros(64 * 6, dtype=xp.uint32)
    kernel("matches")((1,), (64,), (to_device(keys), out))
    got = to_host(out).reshape(64, 6)
    for t in range(64):
        warp = range(t - t % 32, t - t % 32 + 32)
        half = range(t - t % 16, t - t % 16 + 16)
        mask_of = lambda lanes, pred: sum(1 << (u % 32) for u in lanes if pred(u))  # noqa: E731
        all_low = len({int(keys[u]) // 1000 for u in warp}) == 1
        even_half = len({int(keys[u]) % 2 for u in half}) == 1
        want = [mask_of(warp, lambda u: keys[u] == keys[t]),
                mask_of(half, lambda u: keys[u] == keys[t]),
                mask_of(warp, lambda u: True) if all_low else 0, int(all_low),
                mask_of(half, lambda u: True) if even_half else 0, int(even_half)]
        assert list(got[t]) == want, t


# ---- 5. line numbers after rewritten declarations ----------------------------------------------

@emulator_only
def test_an_index_after_a_three_line_declaration_names_its_line():
    with pytest.raises(LaunchError, match=(
            rf"index_after_long_declaration: block \(0, 0, 0\), thread \(0, 0, 0\): index 4 of "
            rf"__shared__ tall is out of bounds: tall is float\[4\]\[8\] \(its dimension 1 has 4 "
            rf"elements\), on line {line_of(SOURCE, 'the out-of-bounds line')}$")):
        kernel("index_after_long_declaration")((1,), (32,), (np.zeros(32, np.float32), np.int32(4)))


def test_the_rewrites_keep_every_line_break():
    from book.launch.rewrite import emulate_source
    text = SOURCE.read_text()
    for check in (False, True):
        rewritten = emulate_source(text, check)
        assert rewritten.count("\n") == text.count("\n")
        assert re.search(r"tall\[i\]\[0\];  // the out-of-bounds line",
                         rewritten.splitlines()[line_of(SOURCE, "the out-of-bounds line") - 1])


HISTOGRAM = r"""
extern "C" __global__ void hist(const int* x, int* bins, int n, int zero) {
    __shared__ int s[16];
    if (zero && threadIdx.x < 16) s[threadIdx.x] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&s[x[i] & 15], 1);
    __syncthreads();
    if (threadIdx.x < 16) atomicAdd(&bins[threadIdx.x], s[threadIdx.x]);
}
"""


@pytest.mark.skipif(BACKEND != "cpu", reason="the emulator's shared memory")
def test_shared_memory_starts_as_garbage_not_as_zeros(tmp_path):
    """A GPU's shared memory holds what it held: a histogram never zeroed is wrong there. On the
    emulator every block's shared arrays start as 0xFF bytes (-1, NaN), so it is wrong here too,
    in the first block as in the others, instead of right by luck."""
    src = tmp_path / "hist.cu"
    src.write_text(HISTOGRAM)
    k, x = load_kernel(src, "hist"), np.arange(256, dtype=np.int32)
    for zero, each in ((1, 16), (0, 16 - 4)):  # (4 blocks, each bin starting at -1 without zeroing)
        bins = np.zeros(16, np.int32)
        k(4, 64, (x, bins, np.int32(256), np.int32(zero)))
        np.testing.assert_array_equal(bins, each)


# ---- 5. check mode through plain pointers and atomics ------------------------------------------

@emulator_only
def test_check_mode_follows_a_shared_array_passed_to_a_plain_pointer(check_mode):
    """The warp reduction without volatile: its accesses reach sdata through a float*
    parameter, where check mode used to see nothing; so do *p and *(p + 1) of a pointer into
    sdata."""
    with pytest.raises(LaunchError, match=(
            r"reduce_plain_pointer: block \(0, 0, 0\), thread \(1, 0, 0\): race on shared memory: "
            r"this thread writes sdata\[1\], which thread \(0, 0, 0\) read with no "
            rf"__syncthreads\(\) between them \(line {line_of(SOURCE, 'the plain pointer')}\). Both "
            r"are lanes of warp 0: a __syncwarp\(\) between")):
        kernel("reduce_plain_pointer")((1,), (64,), (np.ones(64, np.float32),
                                                     np.zeros(1, np.float32)))

    with pytest.raises(LaunchError, match=(
            r"neighbour_deref: block \(0, 0, 0\), thread \(1, 0, 0\): race on shared memory: "
            r"this thread writes sdata\[1\], which thread \(0, 0, 0\) read with no "
            rf"__syncthreads\(\) between them \(line {line_of(SOURCE, 'the deref race')}\)")):
        kernel("neighbour_deref")((1,), (64,), (np.ones(64, np.float32), np.zeros(1, np.float32)))


def test_a_shared_histogram_zeroed_first_counts_right():
    bins = xp.zeros(16, dtype=xp.int32)
    kernel("shared_histogram")((1,), (64,), (to_device(np.arange(64, dtype=np.int32)), bins,
                                             np.int32(1)))
    np.testing.assert_array_equal(to_host(bins), 4)


@emulator_only
def test_check_mode_reports_a_histogram_never_zeroed_and_not_its_atomics(check_mode):
    x, bins = np.arange(64, dtype=np.int32), np.zeros(16, np.int32)
    kernel("shared_histogram")((1,), (64,), (x, bins, np.int32(1)))  # 64 atomics, no race
    np.testing.assert_array_equal(bins, 4)
    with pytest.raises(LaunchError, match=(
            r"shared_histogram: block \(0, 0, 0\), thread \(0, 0, 0\): reads s\[0\], which no "
            r"thread of the block has written \(yet: uninitialized shared memory, or a missing "
            rf"__syncthreads\(\)\) \(line {line_of(SOURCE, 'the histogram')}\)")):
        kernel("shared_histogram")((1,), (64,), (x, bins, np.int32(0)))


@emulator_only
def test_check_mode_names_the_line_that_runs_past_the_dynamic_shared_memory(check_mode):
    """A second array carved from the dynamic shared memory (`keys = (int*)(buf + blockDim.x)`)
    by a launch that sized it for the first: without the check mode the guard page names no line."""
    with pytest.raises(LaunchError, match=(
            rf"carved_arrays: block \(0, 0, 0\), thread \(0, 0, 0\): the write on line "
            rf"{line_of(SOURCE, 'the carved array')} is 0 bytes past the end of the dynamic shared memory "
            r"\(extern __shared__\), through a pointer: the launch gave 128 bytes")):
        kernel("carved_arrays")((1,), (32,), (np.ones(32, np.float32), np.zeros(32, np.float32)),
                                shared_mem=128)
    y = xp.zeros(32, dtype=xp.float32)  # sized for both: legal
    kernel("carved_arrays")((1,), (32,), (to_device(np.ones(32, np.float32)), y), shared_mem=256)
    np.testing.assert_array_equal(to_host(y), 1 + np.arange(32))


def test_a_shared_scalar_in_a_switch_compiles_in_check_mode(check_mode):
    out = xp.zeros(3 * 32, dtype=xp.float32)
    kernel("scalar_switch")((3,), (32,), (to_device(np.array([0, 1, 7], np.int32)), out))
    assert np.array_equal(to_host(out), np.repeat([1.0, 2.0, 3.0], 32).astype(np.float32))


@emulator_only
def test_check_mode_finds_atomics_racing_the_zeroing_before_them(check_mode):
    """Thread 0's plain write stays the record when its own atomic follows: another thread's
    atomic with no barrier after the zeroing races with it (on a GPU the zeroing may wipe it)."""
    line = line_of(SOURCE, "// zeroing")
    with pytest.raises(LaunchError, match=(
            r"init_then_atomics: block \(0, 0, 0\), thread \(1, 0, 0\): race on shared memory: this "
            rf"thread writes total, which thread \(0, 0, 0\) wrote with no __syncthreads\(\) between "
            rf"them \(line {line + 1}\)")):
        kernel("init_then_atomics")((1,), (64,), (np.ones(64, np.float32), np.zeros(1, np.float32)))


def test_names_shadowing_a_shared_scalar_compile_in_check_mode(check_mode):
    out = xp.zeros(32, dtype=xp.float32)
    kernel("scalar_shadows")((1,), (32,), (out,))
    assert (to_host(out) == 11.0).all()


@emulator_only
def test_check_mode_finds_a_shared_update_through_a_helpers_reference(check_mode):
    with pytest.raises(LaunchError, match=(
            r"shared_count_by_reference: block \(0, 0, 0\), thread \(1, 0, 0\): race on shared "
            r"memory: this thread reads count, which thread \(0, 0, 0\) wrote")):
        kernel("shared_count_by_reference")((1,), (64,), (np.ones(64, np.float32), np.zeros(1, np.int32)))
