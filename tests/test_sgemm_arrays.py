"""book.sgemm takes the arrays a user holds -- PyTorch tensors, anything with
__cuda_array_interface__ or __dlpack__ -- reads them in place, and returns the same kind."""
import numpy as np
import pytest

import book
from book import BACKEND, LaunchError, to_device, to_host, xp
from book.blas import ozaki
from book.registry import KERNELS, device_cc


class DLPackOnly:
    """An array of another library that speaks only DLPack."""
    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def inputs(m=37, k=21, n=13, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)


def error(got, a, b):
    return np.abs(np.asarray(got, np.float64) - a.astype(np.float64) @ b).max() / np.abs(a @ b).max()


def test_a_dlpack_array_is_read_in_place():
    a, b = inputs()
    c = book.sgemm(DLPackOnly(to_device(a)), to_device(b))
    assert isinstance(c, xp.ndarray) and error(to_host(c), a, b) < 1e-6


def test_anything_else_is_refused_by_name():
    with pytest.raises(LaunchError, match=r"sgemm: A must be a 2-D \w+ array, a PyTorch tensor or "
                                          r"an object with __cuda_array_interface__ or __dlpack__, "
                                          r"got list"):
        book.sgemm([[1.0]], to_device(np.ones((1, 1), np.float32)))


@pytest.mark.parametrize("precision", ["fp32", "auto", "tf32x3", "ozaki"])
def test_torch_tensors_in_and_out(precision):
    """As a Colab user holds them: PyTorch tensors in, a tensor out, with every precision this
    GPU (or BOOK_ASSUME_CC) runs."""
    torch = pytest.importorskip("torch")
    device = "cuda" if BACKEND == "gpu" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("this PyTorch has no CUDA")
    if (precision == "tf32x3" and KERNELS["tf32x3_wgmma"].why_not_here() is not None) or \
            (precision == "ozaki" and device_cc() < ozaki.MIN_CC):
        pytest.skip(f"precision={precision!r} does not run on this GPU")
    a, b = inputs()
    ta, tb = torch.from_numpy(a).to(device), torch.from_numpy(b).to(device)
    c = book.sgemm(ta, tb, precision=precision)
    assert isinstance(c, torch.Tensor) and c.device.type == device
    assert error(c.cpu().numpy(), a, b) < 1e-6
    # transposed views, read as they lie; out= a tensor, written in place and returned as given
    out = torch.full((13, 37), float("nan"), device=device)
    got = book.sgemm(tb.T, ta.T, out=out, precision=precision)
    assert got is out and error(out.cpu().numpy().T, a, b) < 1e-6


@pytest.mark.skipif(BACKEND != "gpu", reason="PyTorch's CUDA streams")
def test_a_torch_tensor_is_computed_on_torchs_current_stream():
    torch = pytest.importorskip("torch")
    a, b = inputs(512, 512, 512, seed=1)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        ta = torch.from_numpy(a).cuda() * 1.0  # queued on `stream`, before sgemm reads it
        tb = torch.from_numpy(b).cuda()
        c = book.sgemm(ta, tb)
        d = c * 2.0  # queued on `stream` after sgemm's kernels
    stream.synchronize()
    assert error(d.cpu().numpy() / 2.0, a, b) < 1e-6
