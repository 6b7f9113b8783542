// cuda_emu/builtins.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

#include <bit>

// ---- CUDA C keywords and built-ins -----------------------------------------------------------
#define __global__ __attribute__((visibility("hidden")))  // a kernel named err or fault
                                                           // must not replace libc's own
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __shared__ static thread_local
#define __constant__  // a namespace-scope variable (so `static __constant__` reads as on a GPU)
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__  // a read-only kernel parameter: every parameter is a copy here
#if !__has_builtin(__builtin_assume)  // (g++ has none: the assumption is only a hint)
#define __builtin_assume(expression) static_cast<void>(sizeof(expression))
#endif
#define __syncthreads() ::cuda_emu::syncthreads(__LINE__)
#define __syncthreads_count(pred) ::cuda_emu::syncthreads_count(__LINE__, pred)
#define __syncthreads_and(pred) (::cuda_emu::syncthreads_count(__LINE__, !(pred)) == 0)
#define __syncthreads_or(pred) (::cuda_emu::syncthreads_count(__LINE__, pred) != 0)
#define __syncwarp(...) ::cuda_emu::syncwarp(__LINE__ __VA_OPT__(, ) __VA_ARGS__)
#define __shfl_sync(...) ::cuda_emu::shfl(__LINE__, __VA_ARGS__)
#define __shfl_up_sync(...) ::cuda_emu::shfl_up(__LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) ::cuda_emu::shfl_down(__LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) ::cuda_emu::shfl_xor(__LINE__, __VA_ARGS__)
#define __ballot_sync(mask, pred) ::cuda_emu::ballot(__LINE__, mask, pred)
#define __any_sync(mask, pred) (::cuda_emu::ballot(__LINE__, mask, pred) != 0u)
#define __all_sync(mask, pred) (::cuda_emu::ballot(__LINE__, mask, !(pred)) == 0u)
#define __activemask() ::cuda_emu::activemask(__LINE__)
#define __reduce_add_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, v, 0u)
#define __reduce_min_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, v, 1u)
#define __reduce_max_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, v, 2u)
#define __reduce_and_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, (unsigned)(v), 3u)
#define __reduce_or_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, (unsigned)(v), 4u)
#define __reduce_xor_sync(mask, v) ::cuda_emu::reduce(__LINE__, mask, (unsigned)(v), 5u)
#define threadIdx (::cuda_emu::thread_idx)
#define blockIdx (::cuda_emu::block_idx)
#define blockDim (::cuda_emu::block_dim)
#define gridDim (::cuda_emu::grid_dim)
#define warpSize 32

template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) { return b < a ? b : a; }
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) { return a < b ? b : a; }

// The CUDA Math API's integer minimum and maximum functions.
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }

template <class T> inline T __ldg(const T* p) { return *p; }
// The other load and store cache hints (ld.global.cg, .ca, .cs, .lu, .cv; st.global.wb, .cg, .cs,
// .wt): on the CPU every load and store is plain.
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T, class V> inline void __stwb(T* p, V v) { *p = static_cast<T>(v); }
template <class T, class V> inline void __stcg(T* p, V v) { *p = static_cast<T>(v); }
template <class T, class V> inline void __stcs(T* p, V v) { *p = static_cast<T>(v); }
template <class T, class V> inline void __stwt(T* p, V v) { *p = static_cast<T>(v); }
// Atomics: the value converts to the pointer's type, as CUDA's overloads take it (atomicAdd(p, 1)
// on a float* or an unsigned* is legal CUDA). In check mode one on global memory marks its
// thread as one that synchronizes (Fiber::synced: memory.h's check of races on global memory
// leaves it alone), as __threadfence() and a volatile read of global memory do.
namespace cuda_emu {
// (an atomic on shared memory orders nothing between blocks: only global memory's count)
inline void note_atomic(const volatile void* p) {
    if constexpr (kCheck) {
        auto* f = worker ? worker->current : nullptr;
        Place shared;
        if (f && !f->synced && !locate(p, 1, shared)) f->synced = true;
    }
}
inline void note_fence() {
    if constexpr (kCheck)
        if (auto* f = worker ? worker->current : nullptr) f->synced = true;
}
}  // namespace cuda_emu
template <class T, class V>  // (the 16-bit floats' own overloads are in half.h)
    requires std::is_arithmetic_v<T>
inline T atomicAdd(T* p, V v) {
    ::cuda_emu::note_atomic(p);
    return std::atomic_ref<T>(*p).fetch_add(static_cast<T>(v));
}
template <class T, class V> inline T atomicSub(T* p, V v) {
    ::cuda_emu::note_atomic(p);
    return std::atomic_ref<T>(*p).fetch_sub(static_cast<T>(v));
}
// atomicExch and atomicCAS are what a spin lock spins on (while (atomicCAS(&lock, 0, 1)) {}):
// a thread that repeats one on the same address lets the others run (yield_if_spinning), so that
// the holder of the lock can release it, as a GPU's other warps would.
// A thread that wins atomicCAS(m, 0, v) on an integer holds a lock until its next atomicExch:
// the check mode takes the read-modify-writes it makes meanwhile as ordered by the lock
// (CUDA by Example's lock around a plain `sum += x`), not as lost updates (memory.h).
template <class T, class V> inline T atomicExch(T* p, V v) {
    ::cuda_emu::yield_if_spinning(p);
    if constexpr (::cuda_emu::kCheck && std::is_integral_v<T>)
        if (auto* f = ::cuda_emu::worker ? ::cuda_emu::worker->current : nullptr; f && f->locks) --f->locks;
    return std::atomic_ref<T>(*p).exchange(static_cast<T>(v));
}
template <class T, class V> inline T atomicAnd(T* p, V v) {
    ::cuda_emu::note_atomic(p);
    return std::atomic_ref<T>(*p).fetch_and(static_cast<T>(v));
}
template <class T, class V> inline T atomicOr(T* p, V v) {
    ::cuda_emu::note_atomic(p);
    return std::atomic_ref<T>(*p).fetch_or(static_cast<T>(v));
}
template <class T, class V> inline T atomicXor(T* p, V v) {
    ::cuda_emu::note_atomic(p);
    return std::atomic_ref<T>(*p).fetch_xor(static_cast<T>(v));
}
template <class T, class U, class V> inline T atomicCAS(T* p, U expected_in, V desired) {
    ::cuda_emu::yield_if_spinning(p);
    T expected = static_cast<T>(expected_in);
    const bool won = std::atomic_ref<T>(*p).compare_exchange_strong(expected, static_cast<T>(desired));
    if constexpr (::cuda_emu::kCheck && std::is_integral_v<T>)
        if (won && expected == T(0) && static_cast<T>(desired) != T(0))
            if (auto* f = ::cuda_emu::worker ? ::cuda_emu::worker->current : nullptr) ++f->locks;
    return expected;  // the old value, whether or not it was replaced
}
template <class T, class V> inline T atomicMax(T* p, V value) {
    ::cuda_emu::note_atomic(p);
    const T v = static_cast<T>(value);
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (old < v && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class T, class V> inline T atomicMin(T* p, V value) {
    ::cuda_emu::note_atomic(p);
    const T v = static_cast<T>(value);
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class F> inline unsigned atomic_update(unsigned* p, F next) {  // old -> next(old)
    ::cuda_emu::note_atomic(p);
    std::atomic_ref<unsigned> a(*p);
    unsigned old = a.load();
    while (!a.compare_exchange_weak(old, next(old))) {}
    return old;
}
inline unsigned atomicInc(unsigned* p, unsigned limit) {
    return atomic_update(p, [limit](unsigned old) { return old >= limit ? 0u : old + 1u; });
}
inline unsigned atomicDec(unsigned* p, unsigned limit) {
    return atomic_update(p, [limit](unsigned old) { return old == 0u || old > limit ? limit : old - 1u; });
}
// Hopper's vector atomicAdd: each element added atomically on its own, as the GPU's is.
inline float2 atomicAdd(float2* p, float2 v) { return {atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y)}; }
inline float4 atomicAdd(float4* p, float4 v) {
    return {atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y), atomicAdd(&p->z, v.z), atomicAdd(&p->w, v.w)};
}
// The atomics of block and system scope (atomicAdd_block, atomicCAS_system...): on the CPU every
// atomic is atomic for all threads, so they are the plain ones.
#define CUDA_EMU_SCOPED_ATOMIC(name)                                                               \
    template <class... A> inline auto name##_block(A... a) { return name(a...); }                  \
    template <class... A> inline auto name##_system(A... a) { return name(a...); }
CUDA_EMU_SCOPED_ATOMIC(atomicAdd)
CUDA_EMU_SCOPED_ATOMIC(atomicSub)
CUDA_EMU_SCOPED_ATOMIC(atomicExch)
CUDA_EMU_SCOPED_ATOMIC(atomicMin)
CUDA_EMU_SCOPED_ATOMIC(atomicMax)
CUDA_EMU_SCOPED_ATOMIC(atomicInc)
CUDA_EMU_SCOPED_ATOMIC(atomicDec)
CUDA_EMU_SCOPED_ATOMIC(atomicCAS)
CUDA_EMU_SCOPED_ATOMIC(atomicAnd)
CUDA_EMU_SCOPED_ATOMIC(atomicOr)
CUDA_EMU_SCOPED_ATOMIC(atomicXor)
#undef CUDA_EMU_SCOPED_ATOMIC

// Integer multiplications' high halves and 24-bit products (the float intrinsics are in math.h).
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((unsigned long long)a * b >> 32); }
inline int __mulhi(int a, int b) { return int((long long)a * b >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)((unsigned __int128)a * b >> 64);
}
inline int __mul24(int a, int b) {  // the low 32 bits of the product of a's and b's low 24 bits
    return int((long long)(int(unsigned(a) << 8) >> 8) * (int(unsigned(b) << 8) >> 8));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline void __threadfence() { ::cuda_emu::note_fence(); std::atomic_thread_fence(std::memory_order_seq_cst); ::cuda_emu::yield_fiber(); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); ::cuda_emu::yield_fiber(); }
inline void __threadfence_system() { ::cuda_emu::note_fence(); std::atomic_thread_fence(std::memory_order_seq_cst); ::cuda_emu::yield_fiber(); }
inline long long clock64() {  // nanoseconds of the host's clock: it counts up, as the SM's does
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}
// The GPU's clock(): the low 32 bits of the same counter as a signed int, widened to clock_t
// (the C library's clock() is the process's CPU time).
#define clock() (static_cast<clock_t>(static_cast<int>(static_cast<unsigned>(clock64()))))

// __nanosleep lets the block's other threads run (what a GPU's other warps do while this one
// sleeps); a spin-wait that calls it waits for them, as on the GPU.
inline void __nanosleep(unsigned) { ::cuda_emu::yield_fiber(); }
inline void __prof_trigger(int) {}  // a profiler counter: nothing counts it here

namespace cuda_emu::intrinsics {
[[noreturn]] inline void stop_kernel(const char* what) {  // __trap, __brkpt, unknown queries
    if (::cuda_emu::worker == nullptr || ::cuda_emu::worker->current == nullptr) std::abort();
    ::cuda_emu::fail_here(what);
}
}  // namespace cuda_emu::intrinsics
[[noreturn]] inline void __trap() {
    ::cuda_emu::intrinsics::stop_kernel("__trap() called: the kernel stopped itself (on a GPU the "
                                        "launch fails with an unspecified launch failure)");
}
[[noreturn]] inline void __brkpt() {
    ::cuda_emu::intrinsics::stop_kernel("__brkpt() called: a breakpoint (on a GPU the launch stops "
                                        "there unless a debugger such as cuda-gdb holds it)");
}
// Which memory a generic pointer points to: the emulator keeps no such record, and answers with
// an error rather than a guess.
#define CUDA_EMU_ADDRESS_SPACE(name)                                                               \
    inline unsigned name(const void*) {                                                            \
        ::cuda_emu::intrinsics::stop_kernel(                                                       \
            #name "() is not supported by the CPU emulator: it cannot tell global, shared, "       \
            "constant and local memory apart by address. Pass which memory it is as an argument "  \
            "or template parameter");                                                              \
    }
CUDA_EMU_ADDRESS_SPACE(__isGlobal)
CUDA_EMU_ADDRESS_SPACE(__isShared)
CUDA_EMU_ADDRESS_SPACE(__isConstant)
CUDA_EMU_ADDRESS_SPACE(__isLocal)
#undef CUDA_EMU_ADDRESS_SPACE

namespace cuda_emu {
inline int syncthreads_count(int line, bool pred) {
    syncthreads(line);
    const unsigned slot = sync_slot;
    sync_sum[slot] += pred;
    syncthreads(line);
    const long long sum = sync_sum[slot];
    if (sync_slot == slot) {  // the first thread past the second barrier
        sync_slot = slot ^ 1u;
        sync_sum[slot ^ 1u] = 0;
    }
    return static_cast<int>(sum);
}
}  // namespace cuda_emu

// ---- Integer intrinsics: bits, bytes, funnel shifts, halving adds, dot products ----------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline unsigned __brev(unsigned x) {
    x = (x >> 1 & 0x55555555u) | (x & 0x55555555u) << 1;
    x = (x >> 2 & 0x33333333u) | (x & 0x33333333u) << 2;
    x = (x >> 4 & 0x0F0F0F0Fu) | (x & 0x0F0F0F0Fu) << 4;
    x = (x >> 8 & 0x00FF00FFu) | (x & 0x00FF00FFu) << 8;
    return x >> 16 | x << 16;
}
inline unsigned long long __brevll(unsigned long long x) {
    return (unsigned long long)__brev(unsigned(x)) << 32 | __brev(unsigned(x >> 32));
}
inline long long __mul64hi(long long a, long long b) { return (long long)((__int128)a * b >> 64); }
inline unsigned short __nv_bswap16(unsigned short x) { return __builtin_bswap16(x); }
inline unsigned __nv_bswap32(unsigned x) { return __builtin_bswap32(x); }
inline unsigned long long __nv_bswap64(unsigned long long x) { return __builtin_bswap64(x); }
// __fns: the position of the offset-th set bit of mask counted from bit base, upwards for a
// positive offset and downwards for a negative one (offset 0: base itself, if set); 0xFFFFFFFF
// where there is none (PTX's fns).
inline unsigned __fns(unsigned mask, unsigned base, int offset) {
    if (offset == 0) return base < 32 && mask >> base & 1u ? base : 0xFFFFFFFFu;
    int count = offset > 0 ? offset : -offset;
    for (int pos = int(base); pos >= 0 && pos < 32; pos += offset > 0 ? 1 : -1)
        if (mask >> pos & 1u && --count == 0) return unsigned(pos);
    return 0xFFFFFFFFu;
}
// __byte_perm(x, y, s): byte n of the result is byte (s >> 4n) & 7 of the eight bytes y:x (x's
// are bytes 0-3; the selector's fourth bit is ignored, as on an H100).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long bytes = (unsigned long long)y << 32 | x;
    unsigned r = 0;
    for (int n = 0; n < 4; ++n) r |= unsigned(bytes >> 8 * (s >> 4 * n & 7u) & 0xFFu) << 8 * n;
    return r;
}
// The funnel shifts: the 64 bits hi:lo shifted by shift & 31 (the _lc and _rc forms: by
// min(shift, 32)); the high word of a left shift, the low word of a right one.
namespace cuda_emu::intrinsics {
inline unsigned long long funnel(unsigned lo, unsigned hi) { return (unsigned long long)hi << 32 | lo; }
}  // namespace cuda_emu::intrinsics
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
    return unsigned(::cuda_emu::intrinsics::funnel(lo, hi) << (shift & 31u) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
    return unsigned(::cuda_emu::intrinsics::funnel(lo, hi) << std::min(shift, 32u) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    return unsigned(::cuda_emu::intrinsics::funnel(lo, hi) >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
    return unsigned(::cuda_emu::intrinsics::funnel(lo, hi) >> std::min(shift, 32u));
}
// Halving adds without overflow (rounded down; __rhadd and __urhadd round up) and sums of
// absolute differences (|x - y| + z, modulo 2^32).
inline int __hadd(int x, int y) { return int(((long long)x + y) >> 1); }
inline int __rhadd(int x, int y) { return int(((long long)x + y + 1) >> 1); }
inline unsigned __uhadd(unsigned x, unsigned y) { return unsigned(((unsigned long long)x + y) >> 1); }
inline unsigned __urhadd(unsigned x, unsigned y) { return unsigned(((unsigned long long)x + y + 1) >> 1); }
inline unsigned __sad(int x, int y, unsigned z) {
    return unsigned(x > y ? (long long)x - y : (long long)y - x) + z;
}
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return (x > y ? x - y : y - x) + z; }

// Dot products of packed integers, accumulated in 32 bits (modulo 2^32): __dp4a sums the four
// byte products of a and b; __dp2a_lo and __dp2a_hi the two products of a's 16-bit halves with
// b's bytes 0-1 or 2-3. The int forms (and char4, short2) read the parts as signed, the unsigned
// ones (uchar4, ushort2) as unsigned.
namespace cuda_emu::intrinsics {
template <class T> inline long long part(unsigned word, int i) {  // the i-th T-sized part
    return static_cast<T>(word >> 8 * sizeof(T) * i);
}
template <class A, class B> inline long long dot(unsigned a, unsigned b, int count, int first_b) {
    long long sum = 0;
    for (int i = 0; i < count; ++i) sum += part<A>(a, i) * part<B>(b, first_b + i);
    return sum;
}
template <class V> inline unsigned word_of(V v) { return std::bit_cast<unsigned>(v); }
}  // namespace cuda_emu::intrinsics
#define CUDA_EMU_DOT(name, A, count, first_b, VectorA)                                             \
    inline int name(int a, int b, int c) {                                                         \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return int(unsigned(c) + unsigned(dot<signed A, signed char>(a, b, count, first_b)));      \
    }                                                                                              \
    inline unsigned name(unsigned a, unsigned b, unsigned c) {                                     \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return c + unsigned(dot<unsigned A, unsigned char>(a, b, count, first_b));                 \
    }                                                                                              \
    inline int name(VectorA a, char4 b, int c) {                                                   \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return name(int(word_of(a)), int(word_of(b)), c);                                          \
    }                                                                                              \
    inline unsigned name(u##VectorA a, uchar4 b, unsigned c) {                                     \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return name(word_of(a), word_of(b), c);                                                    \
    }
CUDA_EMU_DOT(__dp4a, char, 4, 0, char4)
CUDA_EMU_DOT(__dp2a_lo, short, 2, 0, short2)
CUDA_EMU_DOT(__dp2a_hi, short, 2, 2, short2)
#undef CUDA_EMU_DOT

// ---- The SIMD video intrinsics (__vadd2, __vcmpgtu4...) ----------------------------------------
// A 32-bit word holds two 16-bit lanes (the ...2 forms) or four 8-bit ones (...4), read as signed
// (s) or unsigned (u) integers. Each lane of the result is op of the two lanes, wrapped to the
// lane's bits, or clamped to its range in the saturating forms (ss, us). Comparisons give all
// ones (vcmp) or 1 (vset) where true; __vavgs rounds halves away from zero (as an H100 does).
namespace cuda_emu::intrinsics {
template <int Bits, bool Signed> inline long long lane(unsigned word, int i) {
    const long long v = word >> Bits * i & ((1u << Bits) - 1u);
    return Signed && v >> (Bits - 1) ? v - (1LL << Bits) : v;
}
template <int Bits, bool Signed, bool Saturate, class F>
inline unsigned lanewise(unsigned a, unsigned b, F op) {
    const long long lo = Signed ? -(1LL << (Bits - 1)) : 0, hi = (1LL << (Bits - Signed)) - 1;
    unsigned r = 0;
    for (int i = 0; i < 32 / Bits; ++i) {
        long long v = op(lane<Bits, Signed>(a, i), lane<Bits, Signed>(b, i));
        if (Saturate) v = std::clamp(v, lo, hi);
        r |= (unsigned(v) & ((1u << Bits) - 1u)) << Bits * i;
    }
    return r;
}
template <int Bits, bool Signed> inline unsigned sum_of_absolute_differences(unsigned a, unsigned b) {
    long long sum = 0;
    for (int i = 0; i < 32 / Bits; ++i)
        sum += std::llabs(lane<Bits, Signed>(a, i) - lane<Bits, Signed>(b, i));
    return unsigned(sum);
}
}  // namespace cuda_emu::intrinsics
#define CUDA_EMU_SIMD(name, Signed, Saturate, op) /* op of the lanes x and y */                    \
    inline unsigned name##2(unsigned a, unsigned b) {                                              \
        return ::cuda_emu::intrinsics::lanewise<16, Signed, Saturate>(                             \
            a, b, [](auto x, auto y) { return op; });                                              \
    }                                                                                              \
    inline unsigned name##4(unsigned a, unsigned b) {                                              \
        return ::cuda_emu::intrinsics::lanewise<8, Signed, Saturate>(                              \
            a, b, [](auto x, auto y) { return op; });                                              \
    }
#define CUDA_EMU_SIMD1(name, Signed, Saturate, op) /* of one operand, x */                         \
    inline unsigned name##2(unsigned a) {                                                          \
        return ::cuda_emu::intrinsics::lanewise<16, Signed, Saturate>(                             \
            a, 0u, [](auto x, auto) { return op; });                                               \
    }                                                                                              \
    inline unsigned name##4(unsigned a) {                                                          \
        return ::cuda_emu::intrinsics::lanewise<8, Signed, Saturate>(                              \
            a, 0u, [](auto x, auto) { return op; });                                               \
    }
#define CUDA_EMU_SIMD_COMPARE(suffix, Signed, cmp)                                                 \
    CUDA_EMU_SIMD(__vcmp##suffix, Signed, false, x cmp y ? -1 : 0)                                 \
    CUDA_EMU_SIMD(__vset##suffix, Signed, false, x cmp y ? 1 : 0)
#define CUDA_EMU_SAD(name, Bits, Signed)                                                           \
    inline unsigned name(unsigned a, unsigned b) {                                                 \
        return ::cuda_emu::intrinsics::sum_of_absolute_differences<Bits, Signed>(a, b);            \
    }
CUDA_EMU_SIMD(__vadd, false, false, x + y)
CUDA_EMU_SIMD(__vaddss, true, true, x + y)
CUDA_EMU_SIMD(__vaddus, false, true, x + y)
CUDA_EMU_SIMD(__vsub, false, false, x - y)
CUDA_EMU_SIMD(__vsubss, true, true, x - y)
CUDA_EMU_SIMD(__vsubus, false, true, x - y)
CUDA_EMU_SIMD(__vabsdiffs, true, false, x > y ? x - y : y - x)
CUDA_EMU_SIMD(__vabsdiffu, false, false, x > y ? x - y : y - x)
CUDA_EMU_SIMD(__vavgs, true, false, x + y < 0 ? (x + y) >> 1 : (x + y + 1) >> 1)
CUDA_EMU_SIMD(__vavgu, false, false, (x + y + 1) >> 1)
CUDA_EMU_SIMD(__vhaddu, false, false, (x + y) >> 1)
CUDA_EMU_SIMD(__vmaxs, true, false, x > y ? x : y)
CUDA_EMU_SIMD(__vmaxu, false, false, x > y ? x : y)
CUDA_EMU_SIMD(__vmins, true, false, x < y ? x : y)
CUDA_EMU_SIMD(__vminu, false, false, x < y ? x : y)
CUDA_EMU_SIMD1(__vabs, true, false, x < 0 ? -x : x)
CUDA_EMU_SIMD1(__vabsss, true, true, x < 0 ? -x : x)
CUDA_EMU_SIMD1(__vneg, true, false, -x)
CUDA_EMU_SIMD1(__vnegss, true, true, -x)
CUDA_EMU_SIMD_COMPARE(eq, false, ==)
CUDA_EMU_SIMD_COMPARE(ne, false, !=)
CUDA_EMU_SIMD_COMPARE(ges, true, >=)
CUDA_EMU_SIMD_COMPARE(geu, false, >=)
CUDA_EMU_SIMD_COMPARE(gts, true, >)
CUDA_EMU_SIMD_COMPARE(gtu, false, >)
CUDA_EMU_SIMD_COMPARE(les, true, <=)
CUDA_EMU_SIMD_COMPARE(leu, false, <=)
CUDA_EMU_SIMD_COMPARE(lts, true, <)
CUDA_EMU_SIMD_COMPARE(ltu, false, <)
CUDA_EMU_SAD(__vsads2, 16, true)
CUDA_EMU_SAD(__vsads4, 8, true)
CUDA_EMU_SAD(__vsadu2, 16, false)
CUDA_EMU_SAD(__vsadu4, 8, false)
#undef CUDA_EMU_SAD
#undef CUDA_EMU_SIMD_COMPARE
#undef CUDA_EMU_SIMD1
#undef CUDA_EMU_SIMD

// ---- Hopper's DPX intrinsics (__vimax3_s32, __viaddmin_u16x2...) -------------------------------
// Maxima and minima of three values (vimax3), of a sum and a value (viaddmax: max(a + b, c), the
// sum wrapping), clamped below at 0 (_relu); on an int (s32), an unsigned (u32) or each 16-bit
// half of a word (s16x2, u16x2). __vibmax and __vibmin also set *pred to a >= b (a <= b), per
// half in the 16x2 forms, as CUDA documents them (CUDA 13.0 on an H100 was seen to compare the
// halves of the s16x2 forms as unsigned and of the u16x2 forms as signed).
namespace cuda_emu::intrinsics {
template <class T> inline T relu(T v) { return v < T(0) ? T(0) : v; }
template <class T> inline T max3(T a, T b, T c) { return std::max(std::max(a, b), c); }
template <class T> inline T min3(T a, T b, T c) { return std::min(std::min(a, b), c); }
template <class T> inline T add(T a, T b) { return T((unsigned long long)a + (unsigned long long)b); }
// op of each 16-bit half of a, b and c (read as signed or unsigned), packed.
template <bool Signed, class F> inline unsigned halves(unsigned a, unsigned b, unsigned c, F op) {
    using T = std::conditional_t<Signed, short, unsigned short>;
    unsigned r = 0;
    for (int i = 0; i < 2; ++i)
        r |= unsigned((unsigned short)op(T(a >> 16 * i), T(b >> 16 * i), T(c >> 16 * i))) << 16 * i;
    return r;
}
}  // namespace cuda_emu::intrinsics
// name_s32, name_u32, name_s16x2 and name_u16x2 of op(a, b, c), and the relu forms of the signed.
#define CUDA_EMU_DPX3(name, op)                                                                    \
    inline int name##_s32(int a, int b, int c) {                                                   \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return op;                                                                                 \
    }                                                                                              \
    inline unsigned name##_u32(unsigned a, unsigned b, unsigned c) {                               \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return op;                                                                                 \
    }                                                                                              \
    inline int name##_s32_relu(int a, int b, int c) {                                              \
        return ::cuda_emu::intrinsics::relu(name##_s32(a, b, c));                                  \
    }                                                                                              \
    inline unsigned name##_s16x2(unsigned a, unsigned b, unsigned c) {                             \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return halves<true>(a, b, c, [](auto a, auto b, auto c) { return op; });                   \
    }                                                                                              \
    inline unsigned name##_u16x2(unsigned a, unsigned b, unsigned c) {                             \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return halves<false>(a, b, c, [](auto a, auto b, auto c) { return op; });                  \
    }                                                                                              \
    inline unsigned name##_s16x2_relu(unsigned a, unsigned b, unsigned c) {                        \
        using namespace ::cuda_emu::intrinsics;                                                    \
        return halves<true>(a, b, c, [](auto a, auto b, auto c) { return relu(decltype(a)(op)); }); \
    }
CUDA_EMU_DPX3(__vimax3, max3(a, b, c))
CUDA_EMU_DPX3(__vimin3, min3(a, b, c))
CUDA_EMU_DPX3(__viaddmax, std::max(add(a, b), c))
CUDA_EMU_DPX3(__viaddmin, std::min(add(a, b), c))
#undef CUDA_EMU_DPX3
inline int __vimax_s32_relu(int a, int b) { return ::cuda_emu::intrinsics::relu(std::max(a, b)); }
inline int __vimin_s32_relu(int a, int b) { return ::cuda_emu::intrinsics::relu(std::min(a, b)); }
inline unsigned __vimax_s16x2_relu(unsigned a, unsigned b) { return __vimax3_s16x2_relu(a, b, b); }
inline unsigned __vimin_s16x2_relu(unsigned a, unsigned b) { return __vimin3_s16x2_relu(a, b, b); }
#define CUDA_EMU_VIB(name, pick, cmp)                                                              \
    inline int name##_s32(int a, int b, bool* pred) {                                              \
        *pred = a cmp b;                                                                           \
        return pick(a, b);                                                                         \
    }                                                                                              \
    inline unsigned name##_u32(unsigned a, unsigned b, bool* pred) {                               \
        *pred = a cmp b;                                                                           \
        return pick(a, b);                                                                         \
    }                                                                                              \
    inline unsigned name##_s16x2(unsigned a, unsigned b, bool* pred_hi, bool* pred_lo) {           \
        *pred_hi = short(a >> 16) cmp short(b >> 16);                                              \
        *pred_lo = short(a) cmp short(b);                                                          \
        return ::cuda_emu::intrinsics::halves<true>(a, b, 0u, [](auto x, auto y, auto) { return pick(x, y); }); \
    }                                                                                              \
    inline unsigned name##_u16x2(unsigned a, unsigned b, bool* pred_hi, bool* pred_lo) {           \
        *pred_hi = (unsigned short)(a >> 16) cmp (unsigned short)(b >> 16);                        \
        *pred_lo = (unsigned short)a cmp (unsigned short)b;                                        \
        return ::cuda_emu::intrinsics::halves<false>(a, b, 0u, [](auto x, auto y, auto) { return pick(x, y); }); \
    }
CUDA_EMU_VIB(__vibmax, std::max, >=)
CUDA_EMU_VIB(__vibmin, std::min, <=)
#undef CUDA_EMU_VIB

#if CUDA_EMU_OWNS_RUNTIME  // (else in cuda_emu_runtime.o: cuda_emu.h)
// A failed device assert(): glibc's assert() calls __assert_fail. This library's own definition
// (hidden, so the calls bind to it, not to libc's) reports the assertion's text, file and line
// with the thread, as a GPU prints them, and stops the launch; outside a kernel it aborts.
extern "C" __attribute__((visibility("hidden"), noreturn)) void __assert_fail(
    const char* assertion, const char* file, unsigned int line, const char* function) noexcept {
    if (::cuda_emu::worker == nullptr || ::cuda_emu::worker->current == nullptr) std::abort();
    char what[768];
    std::snprintf(what, sizeof what, "device assert failed: `%s` (%s, line %u, in %s)", assertion,
                  file, line, function);
    ::cuda_emu::fail_here(what);
}

#endif

// A shift by the operand's width or more, or by a negative count (the check mode builds with
// -fsanitize=shift-exponent, whose calls bind to these hidden handlers, not to libubsan's).
// C++ leaves it undefined; x86 takes the count modulo the width, where a GPU's shl/shr clamp it
// to the width: the two give different answers, silently. The check mode stops at the line.
namespace cuda_emu::ubsan {
struct Location { const char* file; std::uint32_t line, column; };
struct Type { std::uint16_t kind, info; char name[1]; };
struct Shift { Location at; const Type* lhs; const Type* rhs; };
struct OutOfBounds { Location at; const Type* array; const Type* index; };
struct Overflow { Location at; const Type* type; };
inline long long value(const Type* t, std::uintptr_t v) {  // an integer of up to 64 bits, inline
    unsigned bits = 1u << (t->info >> 1);
    if (!(t->info & 1) || bits >= 64) return static_cast<long long>(v);
    return static_cast<long long>(v << (64 - bits)) >> (64 - bits);
}
}  // namespace cuda_emu::ubsan
#if CUDA_EMU_OWNS_RUNTIME  // (else in cuda_emu_runtime.o: cuda_emu.h)
extern "C" __attribute__((visibility("hidden"), noreturn)) void __ubsan_handle_shift_out_of_bounds_abort(
    ::cuda_emu::ubsan::Shift* s, std::uintptr_t lhs, std::uintptr_t rhs) noexcept {
    (void)lhs;
    if (::cuda_emu::worker == nullptr || ::cuda_emu::worker->current == nullptr) std::abort();
    unsigned bits = 1u << (s->lhs->info >> 1);
    char what[768];
    std::snprintf(what, sizeof what,
                  "a shift by %lld of a %u-bit %s (%s, line %u): C++ leaves a count below 0 or of %u "
                  "and more undefined; a GPU's shl/shr clamp it to %u (giving 0, or the sign bits "
                  "of a signed >>), where this CPU takes it modulo %u. Write the case out, e.g. "
                  "`n >= %u ? 0 : x << n`", ::cuda_emu::ubsan::value(s->rhs, rhs), bits,
                  s->lhs->name, s->at.file, s->at.line, bits, bits, bits, bits);
    ::cuda_emu::fail_here(what);
}
extern "C" __attribute__((visibility("hidden"), noreturn)) void __ubsan_handle_shift_out_of_bounds(
    ::cuda_emu::ubsan::Shift* s, std::uintptr_t lhs, std::uintptr_t rhs) noexcept {
    __ubsan_handle_shift_out_of_bounds_abort(s, lhs, rhs);
}

// An index past a local or member array whose size the type gives (-fsanitize=bounds): `int
// hist[4]; hist[k]` at k = 4, `s.v[32]` of a __shared__ struct's float v[32]. On a GPU the
// access lands in the thread's other locals or the struct's next member, silently.
extern "C" __attribute__((visibility("hidden"), noreturn)) void __ubsan_handle_out_of_bounds_abort(
    ::cuda_emu::ubsan::OutOfBounds* d, std::uintptr_t index) noexcept {
    if (::cuda_emu::worker == nullptr || ::cuda_emu::worker->current == nullptr) std::abort();
    char what[768];
    std::snprintf(what, sizeof what,
                  "index %lld is out of bounds for an array of type %s (%s, line %u): a local "
                  "array, or an array member of a struct, indexed past its end (or below 0); on a "
                  "GPU the access lands on whatever lies beside it (the thread's other variables, "
                  "the struct's next member), silently",
                  ::cuda_emu::ubsan::value(d->index, index), d->array->name, d->at.file, d->at.line);
    ::cuda_emu::fail_here(what);
}
extern "C" __attribute__((visibility("hidden"), noreturn)) void __ubsan_handle_out_of_bounds(
    ::cuda_emu::ubsan::OutOfBounds* d, std::uintptr_t index) noexcept {
    __ubsan_handle_out_of_bounds_abort(d, index);
}

// An integer division or remainder by zero (-fsanitize=integer-divide-by-zero): undefined in
// C++ and on a GPU (which gives some value and goes on); this CPU would stop with SIGFPE and no
// line.
extern "C" __attribute__((visibility("hidden"), noreturn)) void __ubsan_handle_divrem_overflow_abort(
    ::cuda_emu::ubsan::Overflow* d, std::uintptr_t lhs, std::uintptr_t rhs) noexcept {
    (void)lhs, (void)rhs;
    if (::cuda_emu::worker == nullptr || ::cuda_emu::worker->current == nullptr) std::abort();
    char what[512];
    std::snprintf(what, sizeof what,
                  "integer division by zero: a / or %% of %s by 0 (%s, line %u); on a GPU the result "
                  "is undefined. Guard the divisor (`d != 0 ? x / d : ...`)", d->type->name,
                  d->at.file, d->at.line);
    ::cuda_emu::fail_here(what);
}
extern "C" __attribute__((visibility("hidden"), noreturn)) void __ubsan_handle_divrem_overflow(
    ::cuda_emu::ubsan::Overflow* d, std::uintptr_t lhs, std::uintptr_t rhs) noexcept {
    __ubsan_handle_divrem_overflow_abort(d, lhs, rhs);
}
#endif
