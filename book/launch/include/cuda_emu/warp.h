// cuda_emu/warp.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

namespace cuda_emu {

// ---- warp-level intrinsics -------------------------------------------------------------------
// The value type of what a lane passes: a __shared__ element in check mode (or a volatile one) is
// a proxy (shared.h's shared_ref, shared_scalar), which plain_value maps to its element's type.
template <class V> struct plain_value { using type = V; };
template <class V> using plain_t = typename plain_value<std::remove_cvref_t<V>>::type;

template <class T>
inline unsigned long long bits_of(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp values up to 8 bytes");
    unsigned long long u = 0;
    std::memcpy(&u, &v, sizeof(T));
    return u;
}
template <class T>
inline T from_bits(unsigned long long u) {
    T v;
    std::memcpy(&v, &u, sizeof(T));
    return v;
}
inline unsigned segment(int width, int line) {  // lanes of the caller's segment start here
    if (width < 1 || width > 32 || (width & (width - 1))) {
        char what[160];
        std::snprintf(what, sizeof what, "a __shfl*_sync at line %d has width %d; it must be a "
                      "power of 2 from 1 to 32", line, width);
        fail_here(what);
    }
    return worker->current->lane & ~unsigned(width - 1);
}
// The shuffles read `var` from another lane, within the caller's segment of `width` lanes; where
// the source lane falls outside it the caller keeps its own value -- except that __shfl_xor_sync
// may read from an earlier segment, as CUDA documents (PTX shfl.bfly checks the upper bound only).
template <class V, class T = plain_t<V>>
inline T shfl(int line, unsigned mask, const V& v, int src_lane, int width = 32) {
    const unsigned base = segment(width, line);
    const unsigned src = base + (unsigned(src_lane) & unsigned(width - 1));
    return from_bits<T>(warp_op(SHFL, mask, bits_of(T(v)), src, line));
}
template <class V, class T = plain_t<V>>
inline T shfl_up(int line, unsigned mask, const V& v, unsigned delta, int width = 32) {
    const unsigned lane = worker->current->lane, base = segment(width, line);
    const unsigned src = lane - base >= delta ? lane - delta : lane;
    return from_bits<T>(warp_op(SHFL, mask, bits_of(T(v)), src, line));
}
template <class V, class T = plain_t<V>>
inline T shfl_down(int line, unsigned mask, const V& v, unsigned delta, int width = 32) {
    const unsigned lane = worker->current->lane, base = segment(width, line);
    const unsigned src = lane - base + delta < unsigned(width) ? lane + delta : lane;
    return from_bits<T>(warp_op(SHFL, mask, bits_of(T(v)), src, line));
}
template <class V, class T = plain_t<V>>
inline T shfl_xor(int line, unsigned mask, const V& v, int lane_mask, int width = 32) {
    const unsigned lane = worker->current->lane, base = segment(width, line);
    const unsigned other = (lane ^ unsigned(lane_mask)) & 31u;
    const unsigned src = other < base + unsigned(width) ? other : lane;  // earlier segments: yes
    return from_bits<T>(warp_op(SHFL, mask, bits_of(T(v)), src, line));
}
inline unsigned ballot(int line, unsigned mask, int predicate) {
    return unsigned(warp_op(VOTE, mask, predicate != 0, 0, line));
}
inline void syncwarp(int line, unsigned mask = 0xffffffffu) { warp_op(SYNC, mask, 0, 0, line); }
template <class V, class T = plain_t<V>>
inline T reduce(int line, unsigned mask, const V& v, unsigned kind) {
    static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned>,
                  "__reduce_*_sync takes an int or an unsigned");
    const unsigned signed_kind = kind | (std::is_same_v<T, int> ? 8u : 0u);
    return T(unsigned(warp_op(REDUCE, mask, unsigned(T(v)), signed_kind, line)));
}
// __match_any_sync / __match_all_sync (match.sync): the lanes of the mask whose value has the
// same bits as the caller's; all of the mask, or 0, where every lane's value is the same (and
// *pred says which). The value is a 32- or 64-bit integer or floating-point number, as in CUDA.
template <class V, class T = plain_t<V>>
inline unsigned long long match_value(const V& v) {
    static_assert((std::is_integral_v<T> || std::is_floating_point_v<T>) &&
                  (sizeof(T) == 4 || sizeof(T) == 8),
                  "__match_any_sync and __match_all_sync take a 32- or 64-bit int, unsigned, "
                  "long long, unsigned long long, float or double");
    return bits_of(T(v));
}
template <class V>
inline unsigned match_any(int line, unsigned mask, const V& v) {
    return unsigned(warp_op(MATCH_ANY, mask, match_value(v), 0, line));
}
template <class V>
inline unsigned match_all(int line, unsigned mask, const V& v, int* pred) {
    const unsigned all = unsigned(warp_op(MATCH_ALL, mask, match_value(v), 0, line));
    if (pred) *pred = all != 0u;
    return all;
}

// ---- tensor cores: TF32 -------------------------------------------------------------------------
// cvt.rna.tf32.f32: x rounded to TF32 (10 explicit mantissa bits, float's exponent range), to
// nearest with ties away from zero; the 13 low bits of the result are zero. NaN stays NaN.
inline unsigned tf32_rna(float x) {
    unsigned u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7F800000u) == 0x7F800000u) return (u & 0x007FFFFFu) ? 0x7FFFFFFFu : u;
    return (u + 0x1000u) & 0xFFFFE000u;  // on the magnitude: a carry into the exponent is right
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for the whole warp, in the fragment layout
// of the PTX ISA: with g = lane / 4 and t = lane % 4, a lane holds A[g][t], A[g + 8][t],
// A[g][t + 4], A[g + 8][t + 4] in a[0..3]; B[t][g], B[t + 4][g] in b[0..1]; C and D at rows g
// (c[0], c[1]) and g + 8 (c[2], c[3]), columns 2t and 2t + 1.
// Semantics: an operand's 13 low bits are ignored (the operand is read as TF32: truncated, as
// the GPU reads a float32 passed without cvt.rna); each product of two TF32 values is exact.
// The sum of C and the 8 products is formed as a tensor core does it, not as a float32 FFMA
// chain: every term is cut (toward zero) to the grid of 2^(e - 26), e the exponent of the largest
// term, the cut terms are added exactly, and the sum is cut toward zero to float32. NVIDIA does
// not document this; on an H100 it gave the hardware's result bit for bit on 90-95% of the
// elements of random tiles with spread exponents, the rest within 16 steps of that grid (exact
// sums rounded to nearest matched under 60%; tests/test_tensor_cores.py). What matters for
// accuracy is that it cuts toward zero: errors that do not cancel, and grow with K when a kernel
// accumulates in the tensor core (10_tf32.cu). Where every partial sum is exact (small integers,
// say) it agrees with the GPU bit for bit.
inline double cut(double x, double step) { return std::trunc(x / step) * step; }
inline float cut_to_float(double x) {  // toward zero
    float f = float(x);
    if (std::fabs(double(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
    return f;
}
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 for the whole warp: with g = lane / 4 and
// t = lane % 4, a lane holds A[g][4t .. 4t + 3] in a[0] (the lowest byte first), A[g + 8][..] in
// a[1], A[g][16 + 4t ..] in a[2], A[g + 8][16 + 4t ..] in a[3]; B[4t .. 4t + 3][g] in b[0],
// B[16 + 4t ..][g] in b[1]; C and D as in the TF32 mma. Integer sums: exact, wrapping at 2^32.
inline void mma_s8_release(MmaTf32* const (&lanes)[32]) {
    int A[16][32], B[32][8];
    long long C[16][8];
    auto byte = [](unsigned w, unsigned i) { return int(static_cast<signed char>(w >> (8 * i))); };
    for (unsigned l = 0; l < 32; ++l) {
        const unsigned g = l / 4, t = l % 4;
        const MmaTf32& f = *lanes[l];
        for (unsigned i = 0; i < 4; ++i) {
            A[g][4 * t + i] = byte(f.a[0], i), A[g + 8][4 * t + i] = byte(f.a[1], i);
            A[g][16 + 4 * t + i] = byte(f.a[2], i), A[g + 8][16 + 4 * t + i] = byte(f.a[3], i);
            B[4 * t + i][g] = byte(f.b[0], i), B[16 + 4 * t + i][g] = byte(f.b[1], i);
            C[g + 8 * (i / 2)][2 * t + i % 2] = f.ci[i];
        }
    }
    for (unsigned l = 0; l < 32; ++l) {
        const unsigned g = l / 4, t = l % 4;
        for (unsigned i = 0; i < 4; ++i) {
            const unsigned r = g + 8 * (i / 2), c = 2 * t + i % 2;
            long long sum = C[r][c];
            for (unsigned k = 0; k < 32; ++k) sum += A[r][k] * B[k][c];
            lanes[l]->di[i] = int(static_cast<unsigned>(sum));
        }
    }
}

inline void mma_tf32_release(MmaTf32* const (&lanes)[32]) {
    if (lanes[0]->s8) {
        mma_s8_release(lanes);
        return;
    }
    auto value = [](unsigned bits) {
        bits &= 0xFFFFE000u;
        float f;
        std::memcpy(&f, &bits, 4);
        return double(f);
    };
    double A[16][8], B[8][8], C[16][8];
    for (unsigned l = 0; l < 32; ++l) {
        const unsigned g = l / 4, t = l % 4;
        const MmaTf32& f = *lanes[l];
        A[g][t] = value(f.a[0]), A[g + 8][t] = value(f.a[1]);
        A[g][t + 4] = value(f.a[2]), A[g + 8][t + 4] = value(f.a[3]);
        B[t][g] = value(f.b[0]), B[t + 4][g] = value(f.b[1]);
        for (unsigned i = 0; i < 4; ++i) C[g + 8 * (i / 2)][2 * t + i % 2] = f.c[i];
    }
    for (unsigned l = 0; l < 32; ++l) {
        const unsigned g = l / 4, t = l % 4;
        for (unsigned i = 0; i < 4; ++i) {
            const unsigned r = g + 8 * (i / 2), c = 2 * t + i % 2;
            double terms[9] = {C[r][c]}, largest = 0.0;
            for (unsigned k = 0; k < 8; ++k) terms[k + 1] = A[r][k] * B[k][c];  // exact
            for (double x : terms) largest = std::max(largest, std::fabs(x));
            double sum = 0.0;
            if (largest > 0.0 && std::isfinite(largest)) {
                const double step = std::ldexp(1.0, std::ilogb(largest) - 26);
                for (double x : terms) sum += cut(x, step);  // exact: multiples of step < 2^31
            } else {
                for (double x : terms) sum += x;  // zeros, or Inf / NaN as IEEE adds them
            }
            lanes[l]->d[i] = cut_to_float(sum);
        }
    }
}

// Called by each lane: waits for the whole warp (mask 0xffffffff, as .aligned requires), then
// d holds this lane's fragment of D.
inline void mma_tf32(int line, float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                     const float (&c)[4]) {
    MmaTf32 frag;
    for (int i = 0; i < 4; ++i) frag.a[i] = a[i], frag.c[i] = c[i];
    frag.b[0] = b[0], frag.b[1] = b[1];
    warp_op(MMA, 0xffffffffu, reinterpret_cast<unsigned long long>(&frag), 0, line);
    for (int i = 0; i < 4; ++i) d[i] = frag.d[i];
}
inline void mma_s8(int line, int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                   const int (&c)[4]) {
    MmaTf32 frag;
    frag.s8 = 1;
    for (int i = 0; i < 4; ++i) frag.a[i] = a[i], frag.ci[i] = c[i];
    frag.b[0] = b[0], frag.b[1] = b[1];
    warp_op(MMA, 0xffffffffu, reinterpret_cast<unsigned long long>(&frag), 0, line);
    for (int i = 0; i < 4; ++i) d[i] = frag.di[i];
}
inline unsigned activemask(int line) {  // see release_active
    return unsigned(warp_op(ACTIVE, 1u << worker->current->lane, 0, 0, line));
}

}  // namespace cuda_emu

#define __match_any_sync(mask, v) ::cuda_emu::match_any(__LINE__, mask, v)
#define __match_all_sync(mask, v, pred) ::cuda_emu::match_all(__LINE__, mask, v, pred)
