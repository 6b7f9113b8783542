// The timing harness's helper (book/harness/measure.py), not a matmul: one thread that keeps the
// stream busy for `ns` nanoseconds of the GPU's global timer. Launched just before the start
// event, it lets the host queue the event and the timed call while the GPU is still busy here,
// so the time between the events is the GPU's work alone, never the host's launch overhead
// (the Python checks of a launch, CuPy's call, a plan lookup: tens of microseconds).
extern "C" __global__ void hold_stream(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
