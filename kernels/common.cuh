// contend kernels: the prelude that contend-hw prepends to every kernels/*.cu
// file before NVRTC compiles it (no #include: the kernels need no CUDA
// headers, so NVRTC alone compiles them, on a machine with or without a GPU).
//
// Before this file comes the text contend-hw generates from
// crates/contend-hw/src/abi.rs, the one definition of what the kernels share
// with the Rust side: the u32/u64 typedefs, the limits MAX_RANKS, MAX_BLOCKS
// and NPHASE, and struct ArArgs, each checked by static_assert against the
// Rust layout. Do not define them here or in a kernel file.
//
// Memory-ordering rules used everywhere (PCIe P2P has no atomics, so none
// are used across devices):
//   * data that another GPU (or the host) wrote is read with ld.volatile
//     (`ld_sys`), never from a possibly stale cache line;
//   * a writer makes its data visible with __threadfence_system() before it
//     stores a flag; flags are plain volatile stores and volatile polls;
//   * every wait is bounded by a timeout on %globaltimer, so a lost flag
//     ends the kernel with a status word set instead of hanging the GPU.

__device__ __forceinline__ u64 now_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// 16-byte load that always goes to the memory's home (peer L2 over NVLink,
// or host memory over PCIe): for buffers other agents write.
__device__ __forceinline__ uint4 ld_sys(const void* p) {
    uint4 r;
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
    return r;
}

// 16-byte store (posted write when the target is a peer or host memory).
__device__ __forceinline__ void st_v4(void* p, uint4 v) {
    asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

__device__ __forceinline__ u32 ld_flag(const u32* p) {
    u32 v;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_flag(u32* p, u32 v) {
    asm volatile("st.volatile.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Polls `p` until it reaches `want` (epochs only grow; the signed
// difference survives wrap-around). False after `timeout_ns`.
__device__ __forceinline__ bool wait_flag(const u32* p, u32 want, u64 timeout_ns) {
    u64 t0 = 0;
    for (u32 spins = 0;; ++spins) {
        if ((int)(ld_flag(p) - want) >= 0) return true;
        if ((spins & 255u) == 255u) {
            u64 t = now_ns();
            if (t0 == 0) {
                t0 = t;
            } else if (t - t0 > timeout_ns) {
                return false;
            }
        }
    }
}

// Element types: a 16-byte vector holds 4 fp32 or 8 bf16; sums are taken
// in fp32 and rounded once to the element type.
struct F32 {
    static const int N = 4;
    __device__ __forceinline__ static void set(float* a, uint4 v) {
        a[0] = __uint_as_float(v.x);
        a[1] = __uint_as_float(v.y);
        a[2] = __uint_as_float(v.z);
        a[3] = __uint_as_float(v.w);
    }
    __device__ __forceinline__ static void add(float* a, uint4 v) {
        a[0] += __uint_as_float(v.x);
        a[1] += __uint_as_float(v.y);
        a[2] += __uint_as_float(v.z);
        a[3] += __uint_as_float(v.w);
    }
    __device__ __forceinline__ static uint4 pack(const float* a) {
        return make_uint4(__float_as_uint(a[0]), __float_as_uint(a[1]), __float_as_uint(a[2]), __float_as_uint(a[3]));
    }
};

struct BF16 {
    static const int N = 8;
    __device__ __forceinline__ static float lo(u32 w) { return __uint_as_float(w << 16); }
    __device__ __forceinline__ static float hi(u32 w) { return __uint_as_float(w & 0xffff0000u); }
    __device__ __forceinline__ static u32 pack2(float l, float h) {
        u32 d;
        // d = {h (upper half), l (lower half)}, round to nearest even.
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(h), "f"(l));
        return d;
    }
    __device__ __forceinline__ static void set(float* a, uint4 v) {
        a[0] = lo(v.x); a[1] = hi(v.x);
        a[2] = lo(v.y); a[3] = hi(v.y);
        a[4] = lo(v.z); a[5] = hi(v.z);
        a[6] = lo(v.w); a[7] = hi(v.w);
    }
    __device__ __forceinline__ static void add(float* a, uint4 v) {
        a[0] += lo(v.x); a[1] += hi(v.x);
        a[2] += lo(v.y); a[3] += hi(v.y);
        a[4] += lo(v.z); a[5] += hi(v.z);
        a[6] += lo(v.w); a[7] += hi(v.w);
    }
    __device__ __forceinline__ static uint4 pack(const float* a) {
        return make_uint4(pack2(a[0], a[1]), pack2(a[2], a[3]), pack2(a[4], a[5]), pack2(a[6], a[7]));
    }
};

#define GRID_LOOP(i, lo, hi) \
    for (u64 i = (lo) + (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (hi); i += (u64)gridDim.x * blockDim.x)
