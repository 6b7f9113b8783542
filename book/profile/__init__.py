"""Wrappers of NVIDIA's tools, each optional (a chapter says so where one is missing).

* ``ncu`` -- Nsight Compute counters per kernel (DRAM bytes, sectors, bank conflicts, stalls).
* ``sass`` -- the machine code (``nvcc`` + ``cuobjdump``): instruction mix, FFMA share.
* ``sanitize`` -- every kernel under compute-sanitizer (memcheck, racecheck), or ``--cpu``: the
  emulator's check mode.
* ``archs`` -- compiles every kernel for every architecture from sm_70 to sm_90 (NVRTC).
"""


def find(kernel_id: str):
    """What a kernel id names for these tools: a registered kernel, or a plan of ``book.sgemm``
    (ids ``sgemm_<config>_k<splits>[_padb]``, chapter 9)."""
    if kernel_id.startswith("sgemm_"):
        from ..blas import plan_by_id
        return plan_by_id(kernel_id)
    from ..registry import find_kernel
    return find_kernel(kernel_id)
