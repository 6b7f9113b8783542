// Kernels for tests/test_emulator_process.py: the emulator's worker process, and the memory
// semantics of kernel arguments.

// Writes in[5] through its const parameter, casting const away (on a GPU the write happens).
extern "C" __global__ void write_const(const float* in, float* out) {
    if (threadIdx.x == 5) ((float*)in)[5] = 1.0f;
    out[threadIdx.x] = in[threadIdx.x];
}

// The same, with const written after the type.
extern "C" __global__ void write_const_after(float const* in, float* out) {
    if (threadIdx.x == 5) ((float*)in)[5] = 1.0f;
    out[threadIdx.x] = in[threadIdx.x];
}

// out = 2 * in; called with one array as both, in place.
extern "C" __global__ void twice(const float* in, float* out) {
    out[threadIdx.x] = 2.0f * in[threadIdx.x];
}

// Prints a line, then divides by d (0: the worker dies of SIGFPE).
extern "C" __global__ void print_then_divide(int* out, int d) {
    if (threadIdx.x == 0) printf("thread 0 was here\n");
    out[threadIdx.x] = (int)(threadIdx.x + 7) / d;
}

// Never ends (each step an atomic, so no compiler may drop the loop).
extern "C" __global__ void spin(unsigned* count) {
    for (;;) atomicAdd(count, 1u);
}

// Reads a table in device memory, which the test sets from Python before the launch.
__device__ float table[4];
extern "C" __global__ void read_table(float* out) { out[threadIdx.x] = table[threadIdx.x]; }
#ifndef __CUDACC__
// (the emulator only) the address that a launch's symbols= writes to
extern "C" void* process_table() { return table; }
#endif

// An index that overflows int (n * n for n = 50000) and wraps negative, used through a pointer
// (p[i] would be checked before the access): the worker's guards name the right array.
extern "C" __global__ void wrapped_index(float* out, const float* in, int n) {
    float* p = out + n * n;  // (an int that overflows; *p++ is left to the guard regions)
    *p++ = in[threadIdx.x];
}
