"""What each chapter predicts and then checks against measurements.

* ``cpu_loop`` (chapter 1) -- the CPU triple loop in C and Python, timed and fitted.
* ``coalescing`` (chapters 2-3) -- the 32-byte sectors a warp's loads touch, and DRAM traffic.
* ``tiling`` (chapter 4) -- global loads per FMA with shared-memory tiles.
* ``banks`` (chapter 5) -- which of the 32 banks each lane hits, and the conflict degree.
* ``occupancy``, ``ilp`` (chapter 6) -- resident warps per SM, and latency hidden by independent FMAs.
* ``accuracy``, ``pitch`` (chapter 7) -- summation error growth with K, and pitched rows.
* ``diagrams`` (chapters 2-8) -- the pictures of each idea, drawn from a kernel's own parameters.

These depend on ``book.launch``, ``book.harness`` and the registry; nothing here imports a
profiler.
"""
