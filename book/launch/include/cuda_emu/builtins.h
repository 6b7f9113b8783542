// cuda_emu/builtins.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

// ---- CUDA C keywords and built-ins -----------------------------------------------------------
#define __global__ __attribute__((visibility("hidden")))  // a kernel named err or fault
                                                           // must not replace libc's own
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __shared__ static thread_local
#define __constant__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
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

inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
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
// on a float* or an unsigned* is legal CUDA).
template <class T, class V> inline T atomicAdd(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_add(static_cast<T>(v));
}
template <class T, class V> inline T atomicSub(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_sub(static_cast<T>(v));
}
template <class T, class V> inline T atomicExch(T* p, V v) {
    return std::atomic_ref<T>(*p).exchange(static_cast<T>(v));
}
template <class T, class V> inline T atomicAnd(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_and(static_cast<T>(v));
}
template <class T, class V> inline T atomicOr(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_or(static_cast<T>(v));
}
template <class T, class V> inline T atomicXor(T* p, V v) {
    return std::atomic_ref<T>(*p).fetch_xor(static_cast<T>(v));
}
template <class T, class U, class V> inline T atomicCAS(T* p, U expected_in, V desired) {
    T expected = static_cast<T>(expected_in);
    std::atomic_ref<T>(*p).compare_exchange_strong(expected, static_cast<T>(desired));
    return expected;  // the old value, whether or not it was replaced
}
template <class T, class V> inline T atomicMax(T* p, V value) {
    const T v = static_cast<T>(value);
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (old < v && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class T, class V> inline T atomicMin(T* p, V value) {
    const T v = static_cast<T>(value);
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {}
    return old;
}
template <class F> inline unsigned atomic_update(unsigned* p, F next) {  // old -> next(old)
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

// The CUDA math API's fast and rounding intrinsics, and integer ones: the same values where CUDA
// specifies them exactly (the fast ones are computed exactly here; on a GPU they are within the
// documented ulps).
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __saturatef(float x) { return x != x ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline int __float2int_rn(float x) { return static_cast<int>(std::nearbyint(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(std::floor(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(std::ceil(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((unsigned long long)a * b >> 32); }
inline int __mulhi(int a, int b) { return int((long long)a * b >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)((unsigned __int128)a * b >> 64);
}
inline int __mul24(int a, int b) {  // the low 32 bits of the product of a's and b's low 24 bits
    return int((long long)(int(unsigned(a) << 8) >> 8) * (int(unsigned(b) << 8) >> 8));
}
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline long long clock64() {  // nanoseconds of the host's clock: it counts up, as the SM's does
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

// Bit manipulation (CUDA Math API, integer intrinsics).
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
