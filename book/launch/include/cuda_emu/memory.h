// cuda_emu/memory.h -- a part of cuda_emu.h, which includes the parts in order (not
// self-contained: each part uses what the parts before it declare).
// Global memory: the checks book/launch/rewrite_memory.py writes into a kernel's source.
#pragma once

namespace cuda_emu {
}  // namespace cuda_emu
