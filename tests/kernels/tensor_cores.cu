// Kernels that test tensor-core semantics on both backends (tests/test_tensor_cores.py).
#include "tensor.cuh"

// One warp: D = A B + C for a 16 x 8 x 8 tile (A 16 x 8, B 8 x 8, C and D 16 x 8, all row-major),
// each lane loading its fragments in the layout of tensor.cuh. round = 1 rounds A and B to TF32
// first (to_tf32); round = 0 passes their float32 bits as they are.
extern "C" __global__ void mma_tile(const float* A, const float* B, const float* C, float* D,
                                    int round) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    auto op = [&](float x) { return round ? to_tf32(x) : (unsigned)__float_as_int(x); };
    const unsigned a[4] = {op(A[g * 8 + t]), op(A[(g + 8) * 8 + t]), op(A[g * 8 + t + 4]),
                           op(A[(g + 8) * 8 + t + 4])};
    const unsigned b[2] = {op(B[t * 8 + g]), op(B[(t + 4) * 8 + g])};
    const float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t],
                        C[(g + 8) * 8 + 2 * t + 1]};
    float d[4];
    mma_tf32(d, a, b, c);
    for (int i = 0; i < 4; ++i) D[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = d[i];
}

// out[i] = the bits of to_tf32(in[i]).
extern "C" __global__ void round_tf32(const float* in, unsigned* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = to_tf32(in[i]);
}
