"""Launching a kernel: the same CUDA C source on a GPU (CuPy) or on the CPU emulator.

* ``cuda_source`` -- reads a ``.cu`` file: expands the book's includes, parses kernel signatures,
  and reads the GPU compiler's resource report.
* ``runtime`` -- ``load_kernel``, ``Kernel`` (one launch call, its argument checks and clear
  errors), ``xp`` / ``to_device`` / ``to_host``, ``device_limits``; picks the backend.
* ``emulator`` -- the CPU backend: compiles the source as C++20 against ``include/cuda_emu.h``
  and runs each launch in a worker process with guard regions around every array.

Nothing here measures, plots or knows about chapters; everything else in ``book`` builds on it.
"""
