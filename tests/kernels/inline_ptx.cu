// Inline PTX that the preprocessor keeps on the CPU: the emulator refuses it, naming its line.
extern "C" __global__ void lane_ptx(int* out) {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    out[threadIdx.x] = int(lane);
}
