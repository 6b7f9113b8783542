// broken.cu -- wrong matmul kernels that the harness must catch (tests/test_harness.py).
// Same launch as matmul_naive: block (16, 16), grid over the columns and rows of C.

// Indexes B transposed: right only when B happens to be symmetric.
extern "C" __global__ void matmul_wrong(const float* A, const float* B, float* C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[col * K + k < K * N ? col * K + k : 0];
    C[row * N + col] = acc;
}

// Forgets the last row of C: those elements keep whatever was there (NaN, when poisoned).
extern "C" __global__ void matmul_skips_row(const float* A, const float* B, float* C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M - 1 || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

// Right everywhere but one element, where it writes NaN (0/0).
extern "C" __global__ void matmul_writes_nan(const float* A, const float* B, float* C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    const float zero = (float)(row + col) * 0.0f;
    C[row * N + col] = (row == 0 && col == 0) ? zero / zero : acc;
}

// Takes leading dimensions but indexes with K and N: right only when the rows are not padded.
extern "C" __global__ void matmul_ignores_ld(const float* A, const float* B, float* C, int M, int N,
                                             int K, int lda, int ldb, int ldc) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * ldc + col] = acc;
}

// Writes its result into C's row padding too (column col + 1 of the padded row, past N).
extern "C" __global__ void matmul_writes_padding(const float* A, const float* B, float* C, int M,
                                                 int N, int K, int lda, int ldb, int ldc) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * lda + k] * B[k * ldb + col];
    C[row * ldc + col] = acc;
    if (col == N - 1 && ldc > N) C[row * ldc + N] = acc;
}
