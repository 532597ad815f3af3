// Allreduce kernels of contend (written for this repository; DESIGN.md
// "The model" item 7 describes the algorithms). One kernel per algorithm and
// element type: {one_shot_pull, one_shot_push, two_shot_pull, two_shot_push,
// hierarchical}_{bf16, f32}.
//
// Buffers. Every rank r owns an exchange buffer buf[r] (in its own device
// memory with `peer` placement, in pinned host memory mapped into every GPU
// with `host` placement) and a flag area flags[r] next to it. The exchange
// buffer holds two copies (parity 0 and 1) of
//     nranks slots of `region` bytes (slot k), then one gather region (B)
// and call number e uses the copy of parity e & 1. Alternating copies let a
// rank start call e+1 while a slow peer still reads call e's data, so the
// one-shot kernels need a single barrier and the two-shot kernels two.
//
// Barriers. Blocks synchronise with the same block index on the other ranks
// (every rank runs the same grid over the same partition of the data, so
// block b only ever reads what block b of a peer wrote). Block b of rank r
// tells rank j "phase p of call e is done" by storing e into
//     flags[j][parity][p][b][r]
// after a system fence; rank j polls its own flags locally. Epochs come from
// a call counter in the GPU's own memory, advanced by the kernel itself (so
// CUDA-graph replays, which freeze kernel arguments, still count), and waits
// accept any value >= e,
// so a fast rank's next call can never be mistaken for, or clobber, the
// current one. No atomics anywhere.
//
// Timeouts. A wait that exceeds `timeout_ns` writes a status word in mapped
// host memory (1 + phase * 16 + peer) and an abort word in device memory;
// later kernels of that rank see the abort word and return at once.

// The argument block, struct ArArgs (exchange buffers and flag areas of every
// rank, input, output, counter, abort and status words, sizes, timeout, rank,
// nranks, group), is declared by the generated prelude from
// contend_hw::abi::ArArgs.

__device__ __forceinline__ u64 flag_index(u32 parity, u32 phase, u32 block, u32 src) {
    return (((u64)parity * NPHASE + phase) * MAX_BLOCKS + block) * MAX_RANKS + src;
}

__device__ __forceinline__ uint4* slot(const ArArgs& a, u32 rank, u32 parity, u32 k) {
    char* base = (char*)a.buf[rank] + (u64)parity * (a.nranks + 1) * a.region;
    return (uint4*)(base + (u64)k * a.region);
}

__device__ __forceinline__ uint4* gather(const ArArgs& a, u32 rank, u32 parity) {
    return slot(a, rank, parity, a.nranks);
}

__device__ __forceinline__ u64 chunk_lo(const ArArgs& a, u32 c) { return a.nvec * c / a.nranks; }

__device__ __forceinline__ u32 all_but_me(const ArArgs& a) { return ((1u << a.nranks) - 1u) & ~(1u << a.rank); }

struct Call {
    u32 epoch;
    u32 parity;
};

// Start of every kernel: this call's epoch; false if this rank gave up earlier.
__device__ __forceinline__ bool prologue(const ArArgs& a, Call& c) {
    __shared__ u32 s_epoch;
    __shared__ u32 s_abort;
    if (threadIdx.x == 0) {
        s_epoch = ((const volatile u32*)a.counter)[0] + 1u;
        s_abort = *(const volatile u32*)a.abort_word;
    }
    __syncthreads();
    c.epoch = s_epoch;
    c.parity = s_epoch & 1u;
    return s_abort == 0;
}

// End of every kernel: the last block to finish advances the call counter
// (a local atomic on this GPU's own memory, never across a link). Every
// block read the counter before any block got here, so all blocks of a call
// share one epoch whatever the grid size.
__device__ __forceinline__ void epilogue(const ArArgs& a, const Call& c) {
    __syncthreads();
    if (threadIdx.x == 0) {
        u32* counter = (u32*)a.counter;
        __threadfence();
        if (atomicAdd(counter + 1, 1u) == gridDim.x - 1u) {
            counter[1] = 0;
            ((volatile u32*)counter)[0] = c.epoch;
            __threadfence();
        }
    }
}

// Block-level barrier with the ranks in `mask` for phase `phase` of call `c`.
// __syncthreads() orders every thread's data stores before the signalling
// thread's system fence (a fence is cumulative over what its thread has
// observed), and that fence orders them before the flag store: a peer that
// sees the flag sees the data.
__device__ bool barrier(const ArArgs& a, const Call& c, u32 phase, u32 mask) {
    __shared__ u32 s_fail;
    if (mask == 0) return true;
    if (threadIdx.x == 0) s_fail = 0;
    __syncthreads();
    const u32 t = threadIdx.x;
    const bool mine = t < a.nranks && ((mask >> t) & 1u);
    if (mine) {
        __threadfence_system();  // release: my block's data before my flag
        st_flag((u32*)a.flags[t] + flag_index(c.parity, phase, blockIdx.x, a.rank), c.epoch);
        const u32* f = (const u32*)a.flags[a.rank] + flag_index(c.parity, phase, blockIdx.x, t);
        if (!wait_flag(f, c.epoch, a.timeout_ns)) {
            s_fail = 1;
            *(volatile u32*)a.abort_word = 1;
            *(volatile u32*)a.status = 1u + phase * 16u + t;
        }
        __threadfence_system();  // acquire: the peer's data is read after its flag
    }
    __syncthreads();
    return s_fail == 0;
}

// Sum of vector i over all ranks in rank order (the same order on every
// rank, so every rank produces the same bits). `src(j)` gives rank j's copy.
template <typename V, typename Src>
__device__ __forceinline__ uint4 sum_ranks(const ArArgs& a, Src src) {
    uint4 v[MAX_RANKS];
#pragma unroll
    for (u32 j = 0; j < MAX_RANKS; ++j)
        if (j < a.nranks) v[j] = src(j);
    float acc[V::N];
    V::set(acc, v[0]);
#pragma unroll
    for (u32 j = 1; j < MAX_RANKS; ++j)
        if (j < a.nranks) V::add(acc, v[j]);
    return V::pack(acc);
}

// One-shot pull: stage the input in my buffer, barrier, every rank loads
// every peer's buffer and reduces the whole message.
template <typename V>
__device__ void one_shot_pull(const ArArgs& a) {
    Call c;
    if (!prologue(a, c)) return;
    const uint4* in = (const uint4*)a.input;
    uint4* out = (uint4*)a.output;
    uint4* mine = slot(a, a.rank, c.parity, 0);
    GRID_LOOP(i, 0, a.nvec) st_v4(mine + i, in[i]);
    if (!barrier(a, c, 0, all_but_me(a))) return;
    GRID_LOOP(i, 0, a.nvec) {
        out[i] = sum_ranks<V>(a, [&](u32 j) { return j == a.rank ? in[i] : ld_sys(slot(a, j, c.parity, 0) + i); });
    }
    epilogue(a, c);
}

// One-shot push: store my input into slot `rank` of every peer's buffer,
// barrier, reduce from my own buffer (local polling and local loads).
template <typename V>
__device__ void one_shot_push(const ArArgs& a) {
    Call c;
    if (!prologue(a, c)) return;
    const uint4* in = (const uint4*)a.input;
    uint4* out = (uint4*)a.output;
    GRID_LOOP(i, 0, a.nvec) {
        uint4 v = in[i];
#pragma unroll
        for (u32 j = 0; j < MAX_RANKS; ++j)
            if (j < a.nranks && j != a.rank) st_v4(slot(a, j, c.parity, a.rank) + i, v);
    }
    if (!barrier(a, c, 0, all_but_me(a))) return;
    GRID_LOOP(i, 0, a.nvec) {
        out[i] = sum_ranks<V>(a, [&](u32 j) { return j == a.rank ? in[i] : ld_sys(slot(a, a.rank, c.parity, j) + i); });
    }
    epilogue(a, c);
}

// Two-shot pull: stage, barrier, reduce-scatter by loads (rank r reduces
// chunk r from every peer's buffer and publishes it in its gather region),
// barrier, all-gather by loads.
template <typename V>
__device__ void two_shot_pull(const ArArgs& a) {
    Call c;
    if (!prologue(a, c)) return;
    const uint4* in = (const uint4*)a.input;
    uint4* out = (uint4*)a.output;
    uint4* mine = slot(a, a.rank, c.parity, 0);
    for (u32 k = 0; k < a.nranks; ++k) {
        if (k == a.rank) continue;
        GRID_LOOP(i, chunk_lo(a, k), chunk_lo(a, k + 1)) st_v4(mine + i, in[i]);
    }
    if (!barrier(a, c, 0, all_but_me(a))) return;
    uint4* pub = gather(a, a.rank, c.parity);
    GRID_LOOP(i, chunk_lo(a, a.rank), chunk_lo(a, a.rank + 1)) {
        uint4 w = sum_ranks<V>(a, [&](u32 j) { return j == a.rank ? in[i] : ld_sys(slot(a, j, c.parity, 0) + i); });
        out[i] = w;
        st_v4(pub + i, w);
    }
    if (!barrier(a, c, 1, all_but_me(a))) return;
    for (u32 k = 0; k < a.nranks; ++k) {
        if (k == a.rank) continue;
        const uint4* theirs = gather(a, k, c.parity);
        GRID_LOOP(i, chunk_lo(a, k), chunk_lo(a, k + 1)) out[i] = ld_sys(theirs + i);
    }
    epilogue(a, c);
}

// Two-shot push: reduce-scatter by stores (chunk k of my input goes to
// slot `rank` of rank k's buffer), barrier, rank r reduces chunk r locally
// and stores it into every peer's gather region, barrier, copy out locally.
template <typename V>
__device__ void two_shot_push(const ArArgs& a) {
    Call c;
    if (!prologue(a, c)) return;
    const uint4* in = (const uint4*)a.input;
    uint4* out = (uint4*)a.output;
    for (u32 k = 0; k < a.nranks; ++k) {
        if (k == a.rank) continue;
        uint4* dst = slot(a, k, c.parity, a.rank);
        GRID_LOOP(i, chunk_lo(a, k), chunk_lo(a, k + 1)) st_v4(dst + i, in[i]);
    }
    if (!barrier(a, c, 0, all_but_me(a))) return;
    GRID_LOOP(i, chunk_lo(a, a.rank), chunk_lo(a, a.rank + 1)) {
        uint4 w = sum_ranks<V>(a, [&](u32 j) { return j == a.rank ? in[i] : ld_sys(slot(a, a.rank, c.parity, j) + i); });
        out[i] = w;
#pragma unroll
        for (u32 j = 0; j < MAX_RANKS; ++j)
            if (j < a.nranks && j != a.rank) st_v4(gather(a, j, c.parity) + i, w);
    }
    if (!barrier(a, c, 1, all_but_me(a))) return;
    const uint4* got = gather(a, a.rank, c.parity);
    for (u32 k = 0; k < a.nranks; ++k) {
        if (k == a.rank) continue;
        GRID_LOOP(i, chunk_lo(a, k), chunk_lo(a, k + 1)) out[i] = ld_sys(got + i);
    }
    epilogue(a, c);
}

// Hierarchical: ranks form groups of `group` consecutive ranks. Reduce inside
// the group by loads (one-shot pull among mates) into my gather region, then
// every rank loads the group sums of its counterparts (same position in the
// other groups) and adds them in group order. With group == 1 (each GPU its
// own group: what a 2-GPU machine gets) the first stage is a copy and the
// second a one-shot pull of the inputs.
template <typename V>
__device__ void hierarchical(const ArArgs& a) {
    Call c;
    if (!prologue(a, c)) return;
    const uint4* in = (const uint4*)a.input;
    uint4* out = (uint4*)a.output;
    const u32 g = a.group;
    const u32 my_group = a.rank / g;
    const u32 pos = a.rank % g;
    const u32 ngroups = a.nranks / g;
    u32 mates = 0, counterparts = 0;
    for (u32 k = 0; k < g; ++k) mates |= 1u << (my_group * g + k);
    mates &= ~(1u << a.rank);
    for (u32 k = 0; k < ngroups; ++k) counterparts |= 1u << (k * g + pos);
    counterparts &= ~(1u << a.rank);

    if (mates != 0) {
        uint4* mine = slot(a, a.rank, c.parity, 0);
        GRID_LOOP(i, 0, a.nvec) st_v4(mine + i, in[i]);
        if (!barrier(a, c, 0, mates)) return;
    }
    uint4* pub = gather(a, a.rank, c.parity);
    GRID_LOOP(i, 0, a.nvec) {
        uint4 v[MAX_RANKS];
        u32 n = 0;
        for (u32 k = 0; k < g; ++k) {
            const u32 j = my_group * g + k;
            v[n++] = j == a.rank ? in[i] : ld_sys(slot(a, j, c.parity, 0) + i);
        }
        float acc[V::N];
        V::set(acc, v[0]);
        for (u32 k = 1; k < n; ++k) V::add(acc, v[k]);
        st_v4(pub + i, V::pack(acc));
    }
    if (!barrier(a, c, 1, counterparts)) return;
    GRID_LOOP(i, 0, a.nvec) {
        uint4 v[MAX_RANKS];
        for (u32 k = 0; k < ngroups; ++k) v[k] = ld_sys(gather(a, k * g + pos, c.parity) + i);
        float acc[V::N];
        V::set(acc, v[0]);
        for (u32 k = 1; k < ngroups; ++k) V::add(acc, v[k]);
        out[i] = V::pack(acc);
    }
    epilogue(a, c);
}

// At most 512 threads per block: the register budget this leaves (128 per
// thread) holds the per-rank vectors without spilling. The backend checks a
// scenario's thread count against the kernel's limit before launching.
#define AR_KERNELS(NAME)                                                                              \
    extern "C" __global__ void __launch_bounds__(512) NAME##_bf16(const ArArgs a) { NAME<BF16>(a); } \
    extern "C" __global__ void __launch_bounds__(512) NAME##_f32(const ArArgs a) { NAME<F32>(a); }

AR_KERNELS(one_shot_pull)
AR_KERNELS(one_shot_push)
AR_KERNELS(two_shot_pull)
AR_KERNELS(two_shot_push)
AR_KERNELS(hierarchical)
