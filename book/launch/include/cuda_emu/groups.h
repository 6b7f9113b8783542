// cuda_emu/groups.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
//
// cooperative_groups.h's block and warp groups, as the CUDA samples use them, on the emulator's
// barriers and warp operations (book/launch/rewrite.py drops the #include, as for cuda_fp16.h):
//   * this_thread_block(): sync(), thread_rank(), size() / num_threads(), group_index(),
//     thread_index(), dim_threads();
//   * tiled_partition<N>(block) (N a power of 2 up to 32): shfl, shfl_up, shfl_down, shfl_xor,
//     sync, ballot, any, all, thread_rank, size, meta_group_rank, meta_group_size;
//   * coalesced_threads(): the lanes that call it together (__activemask), ranked in lane order,
//     with shfl by rank, ballot, any, all, sync;
//   * reduce(group, value, op) of cooperative_groups/reduce.h, with plus, less, greater,
//     bit_and, bit_or, bit_xor;
//   * this_grid(): its ranks; its sync() stops the launch, naming the cooperative launch it needs.
// Each call passes its caller's line (std::source_location), so errors name the kernel's line.
#pragma once

namespace cooperative_groups {

using Where = std::source_location;

inline unsigned block_rank() {
    using ::cuda_emu::thread_idx, ::cuda_emu::block_dim;
    return thread_idx.x + block_dim.x * (thread_idx.y + block_dim.y * thread_idx.z);
}

struct thread_block {
    void sync(Where w = Where::current()) const { ::cuda_emu::syncthreads(int(w.line())); }
    unsigned thread_rank() const { return block_rank(); }
    unsigned size() const {
        return ::cuda_emu::block_dim.x * ::cuda_emu::block_dim.y * ::cuda_emu::block_dim.z;
    }
    unsigned num_threads() const { return size(); }
    dim3 group_index() const { return {::cuda_emu::block_idx.x, ::cuda_emu::block_idx.y, ::cuda_emu::block_idx.z}; }
    dim3 thread_index() const { return {::cuda_emu::thread_idx.x, ::cuda_emu::thread_idx.y, ::cuda_emu::thread_idx.z}; }
    dim3 dim_threads() const { return ::cuda_emu::block_dim; }
    dim3 group_dim() const { return ::cuda_emu::block_dim; }
};
inline thread_block this_thread_block() { return {}; }
inline void sync(const thread_block& g, Where w = Where::current()) { g.sync(w); }

// N consecutive threads of the block (a warp's lanes: N divides 32).
template <unsigned N>
struct thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0,
                  "tiled_partition<N>: the emulator has tiles of a power of 2 up to 32 threads");
    static unsigned lane() { return block_rank() % 32; }
    unsigned mask() const {  // the tile's lanes within its warp
        return N == 32 ? 0xffffffffu : ((1u << N) - 1u) << (lane() / N * N);
    }
    unsigned thread_rank() const { return block_rank() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return block_rank() / N; }
    unsigned meta_group_size() const { return (thread_block().size() + N - 1) / N; }
    void sync(Where w = Where::current()) const { ::cuda_emu::syncwarp(int(w.line()), mask()); }
    template <class V> auto shfl(const V& v, int src, Where w = Where::current()) const {
        return ::cuda_emu::shfl(int(w.line()), mask(), v, src, int(N));
    }
    template <class V> auto shfl_up(const V& v, unsigned d, Where w = Where::current()) const {
        return ::cuda_emu::shfl_up(int(w.line()), mask(), v, d, int(N));
    }
    template <class V> auto shfl_down(const V& v, unsigned d, Where w = Where::current()) const {
        return ::cuda_emu::shfl_down(int(w.line()), mask(), v, d, int(N));
    }
    template <class V> auto shfl_xor(const V& v, int m, Where w = Where::current()) const {
        return ::cuda_emu::shfl_xor(int(w.line()), mask(), v, m, int(N));
    }
    unsigned ballot(int p, Where w = Where::current()) const {  // bit k: the tile's rank k
        return (::cuda_emu::ballot(int(w.line()), mask(), p) & mask()) >> (lane() / N * N);
    }
    bool any(int p, Where w = Where::current()) const { return ballot(p, w) != 0u; }
    bool all(int p, Where w = Where::current()) const { return ballot(!p, w) == 0u; }
};
template <unsigned N, class Parent>
inline thread_block_tile<N> tiled_partition(const Parent&) { return {}; }
template <unsigned N>
inline void sync(const thread_block_tile<N>& g, Where w = Where::current()) { g.sync(w); }

// The lanes that arrived together (__activemask), ranked by lane.
struct coalesced_group {
    unsigned lanes;
    static unsigned lane() { return block_rank() % 32; }
    unsigned thread_rank() const { return unsigned(std::popcount(lanes & ((1u << lane()) - 1u))); }
    unsigned size() const { return unsigned(std::popcount(lanes)); }
    unsigned num_threads() const { return size(); }
    unsigned lane_of(unsigned rank) const {  // the rank-th lane of the group
        unsigned m = lanes;
        for (unsigned k = 0; k < rank && m; ++k) m &= m - 1u;
        return m ? unsigned(std::countr_zero(m)) : 32u;
    }
    void sync(Where w = Where::current()) const { ::cuda_emu::syncwarp(int(w.line()), lanes); }
    template <class V> auto shfl(const V& v, unsigned rank, Where w = Where::current()) const {
        return ::cuda_emu::shfl(int(w.line()), lanes, v, int(lane_of(rank % size())));
    }
    unsigned ballot(int p, Where w = Where::current()) const {  // bit k: the group's rank k
        const unsigned b = ::cuda_emu::ballot(int(w.line()), lanes, p);
        unsigned out = 0, k = 0;
        for (unsigned l = 0; l < 32; ++l)
            if (lanes >> l & 1u) out |= (b >> l & 1u) << k++;
        return out;
    }
    bool any(int p, Where w = Where::current()) const { return ballot(p, w) != 0u; }
    bool all(int p, Where w = Where::current()) const { return ballot(!p, w) == 0u; }
};
inline coalesced_group coalesced_threads(Where w = Where::current()) {
    return {::cuda_emu::activemask(int(w.line()))};
}

struct grid_group {
    unsigned long long thread_rank() const {
        using ::cuda_emu::block_idx, ::cuda_emu::grid_dim;
        const unsigned long long block = block_idx.x + grid_dim.x * (block_idx.y + 1ull * grid_dim.y * block_idx.z);
        return block * thread_block().size() + block_rank();
    }
    unsigned long long size() const {
        using ::cuda_emu::grid_dim;
        return 1ull * grid_dim.x * grid_dim.y * grid_dim.z * thread_block().size();
    }
    unsigned long long num_threads() const { return size(); }
    void sync(Where w = Where::current()) const {
        char what[400];
        std::snprintf(what, sizeof what, "grid.sync() on line %u: a grid-wide barrier needs a "
                      "cooperative launch (cudaLaunchCooperativeKernel, with every block resident "
                      "at once), which neither the book's launcher nor the emulator makes: end the "
                      "kernel there and launch a second one", unsigned(w.line()));
        ::cuda_emu::fail_here(what);
    }
};
inline grid_group this_grid() { return {}; }

template <class T> struct plus { T operator()(const T& a, const T& b) const { return a + b; } };
template <class T> struct less { T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
template <class T> struct greater { T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
template <class T> struct bit_and { T operator()(const T& a, const T& b) const { return a & b; } };
template <class T> struct bit_or { T operator()(const T& a, const T& b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(const T& a, const T& b) const { return a ^ b; } };

// Every thread of the tile gets op over the tile's values (a butterfly of shfl_xor).
template <unsigned N, class V, class Op>
inline auto reduce(const thread_block_tile<N>& g, const V& value, Op op, Where w = Where::current()) {
    ::cuda_emu::plain_t<V> v = value;
    for (unsigned k = N / 2; k > 0; k /= 2) v = op(v, g.shfl_xor(v, int(k), w));
    return v;
}

}  // namespace cooperative_groups
