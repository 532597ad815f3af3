// Microbenchmark kernels of contend (written for this repository): the
// traffic patterns the model's constants describe, one at a time.
//   sm_load   SM loads streamed from a target (peer GPU memory over
//             NVLink/PCIe, mapped host memory over PCIe, or local memory)
//   sm_store  SM stores streamed into a target
//   ping/pong a flag bounced between two agents (GPU-GPU, or GPU-host with
//             the host answering from a CPU thread)
//   spin      wait a given time on the GPU (compute gaps of a workload)
//   hold      hold a stream until the host sets a flag (so a batch of
//             launches queued behind it runs back to back, not at the pace
//             the host enqueues them)

// Streams `nvec` 16-byte vectors from `src` with volatile loads (the same
// loads the allreduce kernels use for peer data); four loads in flight per
// thread per step.
extern "C" __global__ void sm_load(const uint4* src, u64 nvec, u32* sink) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 acc = 0;
    for (; i + 3 * stride < nvec; i += 4 * stride) {
        uint4 a = ld_sys(src + i);
        uint4 b = ld_sys(src + i + stride);
        uint4 c = ld_sys(src + i + 2 * stride);
        uint4 d = ld_sys(src + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < nvec; i += stride) {
        uint4 a = ld_sys(src + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == 0x9e3779b9u) sink[0] = acc;  // never true for the data we load; keeps the loads live
}

// Streams `nvec` 16-byte stores of a pattern into `dst`.
extern "C" __global__ void sm_store(uint4* dst, u64 nvec, u32 pattern) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += stride) {
        const u32 x = pattern ^ (u32)i;
        st_v4(dst + i, make_uint4(x, x + 1u, x + 2u, x + 3u));
    }
}

// Initiator of a flag ping-pong: for k = 1..iters store base+k at `remote`,
// then wait for the answer base+k at `local`. One thread.
extern "C" __global__ void ping(u32* remote, const u32* local, u32 base, u32 iters, u64 timeout_ns, u32* status) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (u32 k = 1; k <= iters; ++k) {
        st_flag(remote, base + k);
        if (!wait_flag(local, base + k, timeout_ns)) {
            *(volatile u32*)status = 0x100u + k;
            return;
        }
    }
}

// Responder: wait for base+k at `local`, answer base+k at `remote`.
extern "C" __global__ void pong(u32* remote, const u32* local, u32 base, u32 iters, u64 timeout_ns, u32* status) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (u32 k = 1; k <= iters; ++k) {
        if (!wait_flag(local, base + k, timeout_ns)) {
            *(volatile u32*)status = 0x200u + k;
            return;
        }
        st_flag(remote, base + k);
    }
}

// The same round trip with the allreduce barriers' fences: a system fence
// before every flag store (release) and after every wait (acquire). Against
// `ping`/`pong` it measures what `__threadfence_system()` costs.
extern "C" __global__ void ping_fenced(u32* remote, const u32* local, u32 base, u32 iters, u64 timeout_ns, u32* status) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (u32 k = 1; k <= iters; ++k) {
        __threadfence_system();
        st_flag(remote, base + k);
        if (!wait_flag(local, base + k, timeout_ns)) {
            *(volatile u32*)status = 0x100u + k;
            return;
        }
        __threadfence_system();
    }
}

extern "C" __global__ void pong_fenced(u32* remote, const u32* local, u32 base, u32 iters, u64 timeout_ns, u32* status) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (u32 k = 1; k <= iters; ++k) {
        if (!wait_flag(local, base + k, timeout_ns)) {
            *(volatile u32*)status = 0x200u + k;
            return;
        }
        __threadfence_system();
        __threadfence_system();
        st_flag(remote, base + k);
    }
}

// Busy-waits `ns` nanoseconds (one thread): a compute gap between collectives.
extern "C" __global__ void spin(u64 ns) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const u64 t0 = now_ns();
    while (now_ns() - t0 < ns) {
    }
}

// Holds the stream until the host stores a nonzero value at `flag` (mapped
// host memory), or `timeout_ns` passes.
extern "C" __global__ void hold(const u32* flag, u64 timeout_ns) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    wait_flag(flag, 1u, timeout_ns);
}
