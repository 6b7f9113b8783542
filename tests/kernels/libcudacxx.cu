// libcu++ (CCCL's cuda/std headers): a GPU compiles it (NVRTC gets CCCL's include folder); the
// emulator refuses the file, naming the header (tests/test_learner_cuda.py).
#include <cuda/std/limits>

extern "C" __global__ void int_limits(int* out) {
    out[0] = cuda::std::numeric_limits<int>::max();
    out[1] = cuda::std::numeric_limits<int>::min();
}
