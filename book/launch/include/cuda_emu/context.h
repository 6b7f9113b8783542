// cuda_emu/context.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
#pragma once

// ---- switching between fibers --------------------------------------------------------------
// A fiber (one CUDA thread) runs on its own stack; the scheduler (scheduler.h) resumes it, and it
// switches back at every barrier, warp operation and yield: a few switches per thread and
// barrier, millions in a launch of small blocks. glibc's swapcontext also saves and restores the
// signal mask at every switch, a system call each time, which took half of such a launch's time.
// On x86-64 the switch below saves only what a function call must keep (the callee-saved
// registers, and the SSE and x87 control words, as swapcontext does) on the fiber's stack, in
// user space. Elsewhere, or with CUDA_EMU_UCONTEXT defined, the ucontext functions do it.
namespace cuda_emu {

inline void fiber_main();

#if defined(__x86_64__) && !defined(CUDA_EMU_UCONTEXT)
#define CUDA_EMU_FAST_SWITCH 1

// A suspended fiber's (or the scheduler's) stack pointer; its registers are on that stack.
struct Context {
    void* sp = nullptr;
};

// cuda_emu_switch(&from, to): push the callee-saved registers and the control words, store the
// stack pointer in *from, load `to` and pop what was pushed there; `ret` goes on where `to` left
// off. cuda_emu_fiber_entry: a new fiber's first code (start_context puts its address where
// `ret` finds it), which calls fiber_main (r12) and marks the end of the fiber's call stack.
extern "C" void cuda_emu_switch(void** from, void* to);
extern "C" void cuda_emu_fiber_entry();
#if CUDA_EMU_OWNS_RUNTIME
asm(R"(
    .text
    .p2align 4
    .globl cuda_emu_switch
    .hidden cuda_emu_switch
    .type cuda_emu_switch, @function
cuda_emu_switch:
    .cfi_startproc
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .cfi_endproc
    .size cuda_emu_switch, .-cuda_emu_switch

    .p2align 4
    .globl cuda_emu_fiber_entry
    .hidden cuda_emu_fiber_entry
    .type cuda_emu_fiber_entry, @function
cuda_emu_fiber_entry:
    .cfi_startproc
    .cfi_undefined rip
    xorl %ebp, %ebp
    callq *%r12
    ud2
    .cfi_endproc
    .size cuda_emu_fiber_entry, .-cuda_emu_fiber_entry
)");
#endif

// Suspends the running code into `from` and resumes `to`.
inline void switch_context(Context& from, Context& to) { cuda_emu_switch(&from.sp, to.sp); }

// Makes `c` a fiber that starts in fiber_main on the `bytes` of stack at `stack` (16-aligned).
// fiber_main never returns: it ends with finish_fiber, a switch to the scheduler (`link`).
inline void start_context(Context& c, char* stack, std::size_t bytes, Context& /*link*/) {
    auto* top = reinterpret_cast<unsigned long long*>(stack + bytes);
    auto* sp = top - 10;  // 80 bytes: the frame cuda_emu_switch pops, 16-aligned, then spare
    unsigned mxcsr;
    unsigned short fpucw;
    asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fpucw));
    sp[0] = mxcsr | static_cast<unsigned long long>(fpucw) << 32;
    sp[1] = sp[2] = 0;                                         // r15, r14
    sp[3] = 0;                                                 // r13
    sp[4] = reinterpret_cast<unsigned long long>(&fiber_main);  // r12: what the entry calls
    sp[5] = sp[6] = 0;                                         // rbx, rbp
    sp[7] = reinterpret_cast<unsigned long long>(&cuda_emu_fiber_entry);  // where `ret` goes
    c.sp = sp;  // (after `ret` the stack pointer is top - 16: aligned for the call)
}

// The end of a fiber: back to the scheduler, never to return.
[[noreturn]] inline void finish_fiber(Context& self, Context& scheduler) {
    switch_context(self, scheduler);
    __builtin_unreachable();
}

#else

struct Context {
    ucontext_t uc;
};

inline void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }

inline void start_context(Context& c, char* stack, std::size_t bytes, Context& link) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = bytes;
    c.uc.uc_link = &link.uc;  // fiber_main's return resumes the scheduler
    makecontext(&c.uc, fiber_main, 0);
}

inline void finish_fiber(Context&, Context&) {}  // returning from fiber_main resumes uc_link

#endif

}  // namespace cuda_emu
