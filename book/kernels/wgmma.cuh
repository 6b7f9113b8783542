// wgmma.cuh -- Hopper's warpgroup mma (wgmma) with TF32 operands, fed by bulk copies (chapter 10,
// step 3), on the GPU (compute capability 9.0, compiled for sm_90a) and on the CPU emulator.
#ifndef BOOK_WGMMA_CUH
#define BOOK_WGMMA_CUH
#include "tensor.cuh"
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "wgmma.cuh needs compiling for sm_90a (NVRTC option -arch=sm_90a; a Hopper GPU)"
#endif

// A warpgroup is 4 consecutive warps (128 threads). wgmma_m64n128_tf32(d, a, b, accumulate):
// D (64 x 128) = A (64 x 8) B (8 x 128) [+ D], both operands read by the tensor core straight from
// shared memory, each stored "K-major" (A: 64 rows of 8 k's; B: 128 rows -- columns of B -- of
// 8 k's), 128 bytes per row in the 128-byte swizzle: the 16-byte piece j of row r sits at piece
// j ^ (r % 8), the rows 1024-byte aligned in groups of 8 (tf32_swizzle below). a and b point at
// the operand's first k inside such a tile (tile + 8 s floats for k-step s).
// Warp w of the warpgroup receives rows 16 w .. 16 w + 15 of D, in mma_tf32's C layout for each
// of the 16 column blocks of 8: d[4 j + i] = D[16 w + g + 8 (i / 2)][8 j + 2 t + i % 2].
// The mma is asynchronous: wgmma_fence() before, wgmma_commit() after a group, wgmma_wait<n>()
// until at most n groups are in flight; d may be read only after that.
// The CPU emulator computes it at once as the warp's 16 mma_tf32 (same sums, same rounding).
__device__ __forceinline__ int tf32_swizzle(int row, int k) {  // float offset of (row, k) in a tile
    return row * 32 + (((k / 4) ^ (row % 8)) * 4) + k % 4;
}
template <typename T> __device__ __forceinline__ T* align_1024(T* p) {  // first 1024-byte boundary
#ifdef __CUDA_ARCH__
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
    return reinterpret_cast<T*>(reinterpret_cast<char*>(p) + (((s + 1023u) & ~1023u) - s));
#else
    const auto u = reinterpret_cast<unsigned long long>(p);
    return reinterpret_cast<T*>((u + 1023ull) & ~1023ull);
#endif
}

#ifdef __CUDA_ARCH__
__device__ __forceinline__ unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// Matrix descriptor: start address / 16, leading offset 1 (unused in this layout), stride between
// groups of 8 rows 1024 bytes (/ 16 = 64), swizzle mode 1 (128 bytes).
__device__ __forceinline__ unsigned long long tf32_descriptor(const float* p) {
    return (unsigned long long)((shared_address(p) & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) |
           (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int n> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory");
}
template <int n> __device__ __forceinline__ void fence_registers(float (&d)[n]) {  // keep reads after the wait
    for (int i = 0; i < n; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// The 64 accumulator registers of a m64n128 wgmma: their place in the instruction (operands
// %0 .. %63) and the operands themselves, read and written.
#define WGMMA_D64_REGS                                                                       \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                 \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "        \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "        \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WGMMA_D64_AS(c, d)  /* the 64 accumulators as operands of constraint c, e.g. "+f" */    \
    c(d[0]), c(d[1]), c(d[2]), c(d[3]), c(d[4]), c(d[5]), c(d[6]), c(d[7]),           \
    c(d[8]), c(d[9]), c(d[10]), c(d[11]), c(d[12]), c(d[13]), c(d[14]), c(d[15]),     \
    c(d[16]), c(d[17]), c(d[18]), c(d[19]), c(d[20]), c(d[21]), c(d[22]), c(d[23]),   \
    c(d[24]), c(d[25]), c(d[26]), c(d[27]), c(d[28]), c(d[29]), c(d[30]), c(d[31]),   \
    c(d[32]), c(d[33]), c(d[34]), c(d[35]), c(d[36]), c(d[37]), c(d[38]), c(d[39]),   \
    c(d[40]), c(d[41]), c(d[42]), c(d[43]), c(d[44]), c(d[45]), c(d[46]), c(d[47]),   \
    c(d[48]), c(d[49]), c(d[50]), c(d[51]), c(d[52]), c(d[53]), c(d[54]), c(d[55]),   \
    c(d[56]), c(d[57]), c(d[58]), c(d[59]), c(d[60]), c(d[61]), c(d[62]), c(d[63])
#define WGMMA_D64_OPERANDS(d) WGMMA_D64_AS("+f", d)
__device__ __forceinline__ void wgmma_m64n128_tf32(float (&d)[64], const float* a, const float* b,
                                                   bool accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                 WGMMA_D64_REGS
                 ", %64, %65, p, 1, 1;\n}\n"
                 : WGMMA_D64_OPERANDS(d)
                 : "l"(tf32_descriptor(a)), "l"(tf32_descriptor(b)), "r"(int(accumulate)));
}
// The same with A from registers: a[0..3] are this thread's A (64 x 8) elements in mma_tf32's A
// layout -- rows 16 w + g and 16 w + g + 8 of the warpgroup's 64, k's t and t + 4 -- as
// a = {(g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)}. They must not change until the wgmma is
// done (wgmma_wait): ptxas makes the warpgroup wait where they would.
__device__ __forceinline__ void wgmma_m64n128_tf32_ra(float (&d)[64], const float* a, const float* b,
                                                      bool accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
                 WGMMA_D64_REGS
                 ", {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : WGMMA_D64_OPERANDS(d)
                 : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
                   "r"(__float_as_uint(a[3])), "l"(tf32_descriptor(b)), "r"(int(accumulate)));
}
// setmaxnreg: a warpgroup gives back registers (down) or takes more (up), to n a thread; the
// block's warpgroups must not need more than its 64K registers in all.
template <int n> __device__ __forceinline__ void registers_down() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(n));
}
template <int n> __device__ __forceinline__ void registers_up() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(n));
}
// mbarrier: a shared 64-bit word counting arrivals and bytes of copies still to land.
__device__ __forceinline__ void barrier_init(unsigned long long* bar, int count = 1) {  // count arrivals a phase
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One thread: the next phase of bar completes when `bytes` have been copied by bulk_copy.
__device__ __forceinline__ void barrier_expect(unsigned long long* bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)),
                 "r"(bytes) : "memory");
}
// One arrival on bar (its phase completes with the last of its count).
__device__ __forceinline__ void barrier_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
}
// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared memory
// by the copy engine (cp.async.bulk), counted on bar.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, int bytes, unsigned long long* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 ::"r"(shared_address(dst)), "l"(src), "r"(bytes), "r"(shared_address(bar)) : "memory");
}
// Waits until bar has completed the phase with this parity (0, 1, 0, ... for its uses in turn).
__device__ __forceinline__ void barrier_wait(unsigned long long* bar, int parity) {
    asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT_%=;\n}\n" ::"r"(shared_address(bar)), "r"(parity) : "memory");
}
#else
inline void wgmma_fence() {}
inline void wgmma_commit() {}
template <int n> inline void wgmma_wait() {}
template <int n> inline void fence_registers(float (&)[n]) {}
namespace wgmma_emu {
inline unsigned swizzled(const float* p, int row, int k) {  // the swizzle acts on the address bits
    auto u = reinterpret_cast<unsigned long long>(p) + 128ull * row + 4ull * k;
    u ^= ((u >> 7) & 7ull) << 4;
    unsigned bits;
    std::memcpy(&bits, reinterpret_cast<const void*>(u), 4);
    return bits;
}
// The warpgroup's wgmma as its warps' 16 mma_tf32 each, this thread's A fragment given.
inline void with_fragment(float (&d)[64], const unsigned (&fa)[4], const float* b, bool accumulate) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int j = 0; j < 16; ++j) {
        const unsigned fb[2] = {swizzled(b, 8 * j + g, t), swizzled(b, 8 * j + g, t + 4)};
        const float c[4] = {accumulate ? d[4 * j] : 0.0f, accumulate ? d[4 * j + 1] : 0.0f,
                            accumulate ? d[4 * j + 2] : 0.0f, accumulate ? d[4 * j + 3] : 0.0f};
        float out[4];
        ::cuda_emu::mma_tf32(__LINE__, out, fa, fb, c);
        for (int i = 0; i < 4; ++i) d[4 * j + i] = out[i];
    }
}
}  // namespace wgmma_emu
inline void wgmma_m64n128_tf32(float (&d)[64], const float* a, const float* b, bool accumulate) {
    const int w = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    using wgmma_emu::swizzled;
    const unsigned fa[4] = {swizzled(a, 16 * w + g, t), swizzled(a, 16 * w + g + 8, t),
                            swizzled(a, 16 * w + g, t + 4), swizzled(a, 16 * w + g + 8, t + 4)};
    wgmma_emu::with_fragment(d, fa, b, accumulate);
}
inline void wgmma_m64n128_tf32_ra(float (&d)[64], const float* a, const float* b, bool accumulate) {
    unsigned fa[4];
    std::memcpy(fa, a, sizeof fa);
    wgmma_emu::with_fragment(d, fa, b, accumulate);
}
template <int n> inline void registers_down() {}
template <int n> inline void registers_up() {}
inline void barrier_init(unsigned long long* bar, int count = 1) { ::cuda_emu::mbarrier_init(bar, count); }
inline void barrier_expect(unsigned long long* bar, int) { ::cuda_emu::mbarrier_arrive(bar); }
inline void barrier_arrive(unsigned long long* bar) { ::cuda_emu::mbarrier_arrive(bar); }
inline void bulk_copy(void* dst, const void* src, int bytes, unsigned long long*) {
    std::memcpy(dst, src, bytes);  // lands at once: one of the orders the GPU allows
}
inline void barrier_wait(unsigned long long* bar, int parity) { ::cuda_emu::mbarrier_wait(bar, parity); }
#endif
#endif
