"""The measuring harness every chapter shares.

* ``device`` -- what the machine is (GPU name, clocks, compute capability, or the CPU).
* ``check`` -- random inputs, the float64 reference and the relative error a kernel must pass.
* ``measure`` -- timing (CUDA events, median of repeats) and ``sweep``: check, then time.
* ``ceilings`` -- the measured FMA peak and copy bandwidth a chapter compares against.
* ``results`` -- the per-GPU results files: save only where allowed, fall back to a recorded GPU.
* ``plots``, ``tables`` -- the book's figures and the tables a reader reads (one style).
* ``notebook`` -- the helpers a chapter calls (device line, source listing, glued numbers).
* ``sources`` -- figures quoted from the source articles; ``execute`` -- runs every chapter.
* ``progress`` -- the progress bars of long loops (tqdm's), where a bar may show.

It depends on ``book.launch`` only.
"""
