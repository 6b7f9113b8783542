// cuda_emu/types.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

// ---- CUDA's vector types (vector_types.h) ------------------------------------------------------
// Every vector type and its make_ function, with the size and alignment vector_types.h gives it
// on a 64-bit host: two and four elements are aligned to their whole size, up to 16 bytes (int2
// 8, float4 16, longlong2 16, double4 16); one and three elements to their element's (float3 is
// 12 bytes, 4-aligned). The alignment matters: a GPU faults on a vector access at an address
// that is not a multiple of it, and the emulator checks the same.
#define CUDA_EMU_VECTORS(name, T, align2, align4)                                               \
    struct name##1 { T x; };                                                                     \
    struct alignas(align2) name##2 { T x, y; };                                                  \
    struct name##3 { T x, y, z; };                                                               \
    struct alignas(align4) name##4 { T x, y, z, w; };                                            \
    inline name##1 make_##name##1(T x) { return {x}; }                                           \
    inline name##2 make_##name##2(T x, T y) { return {x, y}; }                                   \
    inline name##3 make_##name##3(T x, T y, T z) { return {x, y, z}; }                           \
    inline name##4 make_##name##4(T x, T y, T z, T w) { return {x, y, z, w}; }
CUDA_EMU_VECTORS(char, signed char, 2, 4)
CUDA_EMU_VECTORS(uchar, unsigned char, 2, 4)
CUDA_EMU_VECTORS(short, short, 4, 8)
CUDA_EMU_VECTORS(ushort, unsigned short, 4, 8)
CUDA_EMU_VECTORS(int, int, 8, 16)
CUDA_EMU_VECTORS(uint, unsigned, 8, 16)
CUDA_EMU_VECTORS(long, long, 2 * sizeof(long), 16)
CUDA_EMU_VECTORS(ulong, unsigned long, 2 * sizeof(long), 16)
CUDA_EMU_VECTORS(longlong, long long, 16, 16)
CUDA_EMU_VECTORS(ulonglong, unsigned long long, 16, 16)
CUDA_EMU_VECTORS(float, float, 8, 16)
CUDA_EMU_VECTORS(double, double, 16, 16)
#undef CUDA_EMU_VECTORS

// CUDA 13's names for the four-element vectors of 8-byte elements, aligned to 16 or 32 bytes
// (it deprecates double4, long4 and the others, whose 16 bytes these _16a types keep).
#define CUDA_EMU_WIDE_VECTOR(name, T, align)                                                    \
    struct alignas(align) name { T x, y, z, w; };                                                \
    inline name make_##name(T x, T y, T z, T w) { return {x, y, z, w}; }
CUDA_EMU_WIDE_VECTOR(long4_16a, long, 16)
CUDA_EMU_WIDE_VECTOR(long4_32a, long, 32)
CUDA_EMU_WIDE_VECTOR(ulong4_16a, unsigned long, 16)
CUDA_EMU_WIDE_VECTOR(ulong4_32a, unsigned long, 32)
CUDA_EMU_WIDE_VECTOR(longlong4_16a, long long, 16)
CUDA_EMU_WIDE_VECTOR(longlong4_32a, long long, 32)
CUDA_EMU_WIDE_VECTOR(ulonglong4_16a, unsigned long long, 16)
CUDA_EMU_WIDE_VECTOR(ulonglong4_32a, unsigned long long, 32)
CUDA_EMU_WIDE_VECTOR(double4_16a, double, 16)
CUDA_EMU_WIDE_VECTOR(double4_32a, double, 32)
#undef CUDA_EMU_WIDE_VECTOR

// A launch's grid and block sizes (threadIdx and blockIdx are uint3s); unset sizes are 1.
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return {x, y, z}; }
};
