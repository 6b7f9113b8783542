// cuda_emu/shared_uses.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare). What book/launch/rewrite.py
// writes around the names of __shared__ variables (sizeof, auto, arguments, atomics, a scalar's
// line), and printf of a tracked element: the proxies of shared.h seen as a GPU sees them.
#pragma once

namespace cuda_emu {

// ---- what rewrite.py writes around the names of __shared__ variables ----------------------------
template <class X> struct is_shared_ref : std::false_type {};
template <class T> struct is_shared_ref<shared_ref<T>> : std::true_type {};
template <class X> struct is_shared_scalar : std::false_type {};
template <class T, class E> struct is_shared_scalar<shared_scalar<T, E>> : std::true_type {};
template <class T> struct plain_value<shared_ref<T>> { using type = std::remove_cv_t<T>; };
template <class T, class E>
struct plain_value<shared_scalar<T, E>> { using type = std::remove_cv_t<T>; };

// sizeof(gpu_t<decltype(x)>) is sizeof x on the GPU (`sizeof s`, `sizeof(s[0])`, `sizeof sum`).
template <class X> struct gpu_type { using type = X; };
template <class T, std::size_t... D>
struct gpu_type<shared_array<T, D...>> { using type = typename array_of<T, D...>::type; };
template <class T, std::size_t... D>
struct gpu_type<shared_view<T, D...>> { using type = typename array_of<T, D...>::type; };
template <class T> struct gpu_type<shared_ref<T>> { using type = T; };
template <class T, class E> struct gpu_type<shared_scalar<T, E>> { using type = T; };
template <class T> struct gpu_type<dynamic_array<T>> { using type = T[]; };  // (no sizeof, as on GPUs)
template <class T> struct gpu_type<volatile_ptr<T>> { using type = volatile T*; };
template <class X> using gpu_t = typename gpu_type<std::remove_cvref_t<X>>::type;

// `auto x = <init>;`: the value of an element or scalar (not a proxy, which would follow later
// writes), the pointer an array decays to; anything else as it is.
template <class X>
inline decltype(auto) value_of(X&& x) {
    using D = std::remove_cvref_t<X>;
    if constexpr (is_shared_ref<D>::value) return x.get();
    else if constexpr (is_shared_scalar<D>::value) return static_cast<typename D::value_type>(x);
    else if constexpr (is_shared_kind<D>::value) return shared_pointer(x);
    else return std::forward<X>(x);
}

// `auto& r = <init>;`: the C++ object itself -- an element or scalar as a T&, an array as the
// C++ array; from then on untracked (as a pointer is).
template <class X>
inline decltype(auto) ref_of(X&& x) {
    using D = std::remove_cvref_t<X>;
    if constexpr (is_shared_ref<D>::value || is_shared_scalar<D>::value) {
        return static_cast<typename gpu_type<D>::type&>(x);
    } else if constexpr (is_shared_kind<D>::value) {
        if constexpr (requires { x.array(); }) return x.array();
        else return *reinterpret_cast<gpu_t<D>*>(x.pointer());  // extern: T (&)[]
    } else {
        return std::forward<X>(x);
    }
}

// A __shared__ variable, or an element of one, passed to a function (`f(s)`, `max(s[i], x)`,
// `__shfl_sync(m, sum, 0)`): as the C++ object, so that a template parameter (T, T*, T (&)[N])
// is deduced as on a GPU. An array is passed as the array (from then on untracked, as a pointer
// is); an element or scalar as a T&, checked as a read for races (but not as unwritten: the
// function may write it; its own accesses through the reference are not tracked).
template <class X>
inline decltype(auto) arg_of(X&& x) {
    using D = std::remove_cvref_t<X>;
    if constexpr (is_shared_ref<D>::value) return x.argument();
    else if constexpr (is_shared_scalar<D>::value && requires { x.ref(); })
        return x.ref().argument();
    else return ref_of(std::forward<X>(x));
}

// A __shared__ scalar named in an expression, in check mode (rewrite.py's _scalar_lines writes
// `at_line(count, __LINE__)`): its proxy, carrying the line, so that a race on it names the line
// as an element's does; anything else (a variable of another function with the same name) as
// it is.
template <class X>
constexpr decltype(auto) at_line(X&& x, int line) {  // (constexpr: a constexpr local it shadows)
    using D = std::remove_cvref_t<X>;
    if constexpr (is_shared_scalar<D>::value && requires { x.ref(); }) {
        auto r = x.ref();
        r.at.line = line;
        return r;
    } else {
        return std::forward<X>(x);
    }
}

}  // namespace cuda_emu

namespace cuda_emu {
// `atomicAdd(&s[i], v)`, `atomicAdd(&count, 1)` on a __shared__ element or scalar (rewrite.py
// writes `atomic_address(s[i])` for the `&s[i]`): the element's address, without ending the
// tracking of its array as a raw `&s[i]` does; in check mode the atomic is checked there, as a
// read (of an element no thread has written: a histogram never zeroed) and a write (racing a
// plain access of another thread with no barrier between; other atomics never race it).
template <class X>
inline auto* atomic_address(X&& x, std::source_location where = std::source_location::current()) {
    using D = std::remove_cvref_t<X>;
    if constexpr (is_shared_ref<D>::value || (is_shared_scalar<D>::value &&
                                               requires { x.ref(); })) {
        auto r = [&] {
            if constexpr (is_shared_ref<D>::value) return x;
            else return x.ref();
        }();
        if constexpr (kCheck)
            if (r.at.info) {
                Place at = r.at;
                if (!at.line) at.line = int(where.line());
                check_access(at, true, false, true, true);
            }
        return r.p;
    } else {
        return &x;
    }
}
}  // namespace cuda_emu

// printf of a tracked element or scalar (a class: it cannot pass through `...`) prints its value.
template <class... A>
inline int printf(const char* format, const A&... args) {
    return std::printf(format, ::cuda_emu::value_of(args)...);
}

