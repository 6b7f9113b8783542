"""CUDA's execution model, on whichever backend runs: indices, barriers, shared memory."""
import numpy as np
import pytest

from book import xp, to_device, to_host


@pytest.mark.parametrize("grid, block", [
    (5, 7),                       # 1D
    ((3, 2), (4, 8)),             # 2D
    ((2, 3, 2), (4, 2, 3)),       # 3D
    ((1, 1, 1), (32, 32, 1)),     # 1024 threads in one block
])
def test_thread_and_block_indices(semantics, grid, block):
    g = (grid,) if isinstance(grid, int) else grid
    b = (block,) if isinstance(block, int) else block
    g, b = g + (1,) * (3 - len(g)), b + (1,) * (3 - len(b))
    n = int(np.prod(g) * np.prod(b))
    out = xp.full(12 * n, -1, dtype=xp.int32)
    semantics("indices")(grid, block, (out,))
    got = to_host(out).reshape(n, 12)
    expect = [(tx, ty, tz, bx, by, bz, *b, *g)
              for bz in range(g[2]) for by in range(g[1]) for bx in range(g[0])
              for tz in range(b[2]) for ty in range(b[1]) for tx in range(b[0])]
    np.testing.assert_array_equal(got, np.array(expect))


@pytest.mark.parametrize("threads", [32, 256, 1024])
def test_block_reduction_with_barriers(semantics, threads):
    n = 3 * threads + 5
    x = np.random.default_rng(1).integers(-50, 50, n).astype(np.float32)  # exact sums
    blocks = -(-n // threads)
    out = xp.full(blocks, xp.nan, dtype=xp.float32)
    semantics("block_sum")(blocks, threads, (to_device(x), out, np.int32(n)))
    padded = np.pad(x, (0, blocks * threads - n)).reshape(blocks, threads)
    np.testing.assert_array_equal(to_host(out), padded.sum(axis=1))


@pytest.mark.parametrize("rows, cols", [(16, 16), (37, 45), (1, 70)])
def test_tile_transpose(semantics, rows, cols):
    x = np.random.default_rng(2).random((rows, cols), dtype=np.float32)
    out = xp.full((cols, rows), xp.nan, dtype=xp.float32)
    grid = (-(-cols // 16), -(-rows // 16))
    semantics("transpose_tile")(grid, (16, 16), (to_device(x), out, np.int32(rows), np.int32(cols)))
    np.testing.assert_array_equal(to_host(out), x.T)


@pytest.mark.parametrize("live", [1, 17, 100, 128])
def test_early_return_before_barrier_does_not_deadlock(semantics, live):
    threads, blocks = 128, 3
    x = np.random.default_rng(3).random(threads * blocks, dtype=np.float32)
    out = xp.full(threads * blocks, xp.nan, dtype=xp.float32)
    semantics("early_exit")(blocks, threads, (to_device(x), out, np.int32(live)))
    got, want = to_host(out).reshape(blocks, threads), x.reshape(blocks, threads)
    np.testing.assert_array_equal(got[:, :live], want[:, :live][:, ::-1])
    assert np.isnan(got[:, live:]).all()  # threads that returned wrote nothing


@pytest.mark.parametrize("n, threads", [(256, 64), (1000, 128), (5, 32)])
def test_dynamic_shared_memory(semantics, n, threads):
    x = np.random.default_rng(4).random(n, dtype=np.float32)
    out = xp.full(n, xp.nan, dtype=xp.float32)
    blocks = -(-n // threads)
    semantics("dynamic_reverse")(blocks, threads, (to_device(x), out, np.int32(n)),
                                 shared_mem=threads * 4)
    want = np.concatenate([x[i:i + threads][::-1] for i in range(0, n, threads)])
    np.testing.assert_array_equal(to_host(out), want)


def test_float4_loads_and_stores(semantics):
    n4 = 1001
    x = np.random.default_rng(5).random(4 * n4, dtype=np.float32)
    out = xp.full(4 * n4, xp.nan, dtype=xp.float32)
    semantics("scale_float4")(-(-n4 // 128), 128, (to_device(x), out, np.int32(n4)))
    np.testing.assert_array_equal(to_host(out), 2 * x)


def test_static_plus_dynamic_shared(semantics):
    out = xp.full(256, xp.nan, dtype=xp.float32)
    semantics("uses_shared")(1, 256, (out,), shared_mem=256 * 4)
    np.testing.assert_array_equal(to_host(out), np.arange(256, dtype=np.float32) + 1)


def test_a_bound_launch_changes_only_the_arguments_it_is_given():
    """direct.bind_launch (how sgemm(precision='tf32x3') launches): a launch laid out once, then
    called with some arguments changed -- each call reads and writes the arrays it names, the
    others stay bound. On the CPU emulator (and a GPU without programmatic dependent launch)
    unchecked_after is the plain launch; on a Hopper GPU, a launch that may start while the one
    before it ends, and the same results."""
    from book.launch.direct import bind_launch, unchecked_after
    from book.launch.runtime import load_kernel
    M, N, K = 5, 7, 3
    rng = np.random.default_rng(4)
    a1, a2, b = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((M, K), (M, K), (K, N)))
    A1, A2, B = to_device(a1), to_device(a2), to_device(b)
    C1, C2 = xp.full((M, N), np.nan, dtype=xp.float32), xp.full((M, N), np.nan, dtype=xp.float32)
    launch = bind_launch(unchecked_after(load_kernel("02_naive.cu", "matmul_naive")), (1, 1), (8, 8),
                         (A1, B, C1, np.int32(M), np.int32(N), np.int32(K)))
    launch({})
    launch({0: A2, 2: C2})
    np.testing.assert_allclose(to_host(C1), a1 @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_host(C2), a2 @ b, rtol=1e-5, atol=1e-6)
