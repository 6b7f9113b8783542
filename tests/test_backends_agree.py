"""On a GPU host: the CPU emulator gives bit-for-bit the GPU's results for the semantics kernels."""
import json

import numpy as np
import pytest

from book import BACKEND
from conftest import SEMANTICS, run_with_backend

pytestmark = pytest.mark.skipif(BACKEND != "gpu", reason="needs a GPU to compare against")

PROGRAM = f"""
import json, numpy as np
from book import load_kernel, xp, to_device, to_host
load = lambda name: load_kernel({str(SEMANTICS)!r}, name)
rng = np.random.default_rng(7)
x = rng.integers(-50, 50, 1000).astype(np.float32)
out = {{}}
o = xp.full(12 * 48, -1, dtype=xp.int32); load("indices")((2, 3, 2), (2, 2, 1), (o,)); out["indices"] = to_host(o).tolist()
o = xp.full(4, xp.nan, dtype=xp.float32); load("block_sum")(4, 256, (to_device(x), o, np.int32(1000))); out["block_sum"] = to_host(o).tolist()
o = xp.full(1000, xp.nan, dtype=xp.float32); load("early_exit")(8, 125, (to_device(x), o, np.int32(77))); out["early_exit"] = to_host(o).tolist()
o = xp.full(1000, xp.nan, dtype=xp.float32); load("dynamic_reverse")(8, 128, (to_device(x), o, np.int32(1000)), shared_mem=512); out["dynamic_reverse"] = to_host(o).tolist()
o = xp.full(1000, xp.nan, dtype=xp.float32); load("scale_float4")(2, 128, (to_device(x), o, np.int32(250))); out["scale_float4"] = to_host(o).tolist()
y = rng.standard_normal(256).astype(np.float32)  # not exact: the shuffle tree's order shows
o = xp.full(8, xp.nan, dtype=xp.float32); load("warp_sum")(4, 64, (to_device(y), o)); out["warp_sum"] = to_host(o).tolist()
o = xp.full(320, -1, dtype=xp.int32); load("shuffles")(1, 64, (o, np.int32(8))); out["shuffles"] = to_host(o).tolist()
p = rng.integers(0, 2, 64).astype(np.int32)
o = xp.full(256, 7, dtype=xp.uint32); load("votes")(1, 64, (to_device(p), o, np.int32(40))); out["votes"] = to_host(o).tolist()
print(json.dumps(out))
"""


def test_cpu_emulator_matches_gpu_bitwise():
    gpu = json.loads(run_with_backend(PROGRAM, "gpu"))
    cpu = json.loads(run_with_backend(PROGRAM, "cpu"))
    for name in gpu:
        np.testing.assert_array_equal(np.array(cpu[name]), np.array(gpu[name]), err_msg=name)
