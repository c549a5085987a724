// The benchmark's stream hold (src/backend/cuda/timing.rs): one thread spins until the host lets
// the stream go, so that a batch of timed passes is queued whole behind it and then runs back to
// back on the device, whatever the host's launch cost (NVBench's blocking kernel does the same).
// It needs nothing of common.cuh: scripts/npp_bench.cu includes this file to time NPP alike.

// Spins until gate[0] reaches `ticket` (the host writes it, in mapped host memory, once the
// batch is queued) or `timeout_ns` have passed on the device's clock; on a timeout it writes
// `ticket` to gate[1], so the host knows the batch was not queued whole when it started.
extern "C" __global__ void convflow_hold(volatile unsigned int* gate, unsigned int ticket,
                                         unsigned long long timeout_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (gate[0] < ticket) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > timeout_ns) {
            gate[1] = ticket;
            return;
        }
        __nanosleep(500);
    }
}
