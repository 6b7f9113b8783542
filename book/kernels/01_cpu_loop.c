/* 01_cpu_loop.c -- chapter 1: the triple loop in C, the baseline every GPU kernel is measured from.
 *
 * C (M x N) = A (M x K) * B (K x N), row-major float32, one output element at a time, the inner
 * loop over k -- the loop order of the source articles. Compiled with -O2 by the same compiler
 * the CPU emulator uses. Expected bottleneck: the inner loop walks down a column of B, a stride of
 * N floats, so for large N nearly every B load misses the cache.
 */
void matmul_cpu(const float* A, const float* B, float* C, int M, int N, int K) {
    for (int row = 0; row < M; ++row) {
        for (int col = 0; col < N; ++col) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
            C[row * N + col] = acc;
        }
    }
}
