"""Wrappers of NVIDIA's tools, each optional (a chapter says so where one is missing).

* ``ncu`` -- Nsight Compute counters per kernel (DRAM bytes, sectors, bank conflicts, stalls).
* ``sass`` -- the machine code (``nvcc`` + ``cuobjdump``): instruction mix, FFMA share.
* ``sanitize`` -- every kernel under compute-sanitizer (memcheck, racecheck), or ``--cpu``: the
  emulator's check mode.
* ``archs`` -- compiles every kernel for every architecture from sm_70 to sm_90 (NVRTC).
"""
