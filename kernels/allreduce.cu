// Allreduce kernels of contend (written for this repository; DESIGN.md
// "The model" item 7 describes the algorithms). One kernel per algorithm and
// element type: {one_shot_pull, one_shot_push, two_shot_pull, two_shot_push,
// hierarchical, island_two_shot, staged_push, two_shot_push_fp32acc,
// ce_ring_step}_{bf16, f32}. The copy-engine ring is a schedule the host
// enqueues (copies between the ranks' buffers, each followed by one
// ce_ring_step kernel); every other algorithm is one kernel per call.
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

// The lossless sum: every rank's element converted to fp32 (exact for bf16),
// added in rank order starting from rank 0's value, and rounded to the
// element type once, at the end. The backend checks the result of the
// kernel that uses it bit for bit against round(fp32 sum in rank order).
template <typename V, typename Src>
__device__ __forceinline__ uint4 sum_fp32_round_once(const ArArgs& a, Src src) {
    float acc[V::N];
    V::set(acc, src(0));
    for (u32 j = 1; j < a.nranks; ++j) V::add(acc, src(j));
    return V::pack(acc);
}

// Two-shot push: reduce-scatter by stores (chunk k of my input goes to
// slot `rank` of rank k's buffer), barrier, rank r reduces chunk r locally
// and stores it into every peer's gather region, barrier, copy out locally.
// `Exact` pins the reduce to sum_fp32_round_once (two_shot_push_fp32acc);
// the plain kernel's sum_ranks takes the same fp32 path today, but only the
// exact variant promises it (a packed bf16 add, as some PCIe kernels use,
// would round at every add).
template <typename V, bool Exact = false>
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
        auto src = [&](u32 j) { return j == a.rank ? in[i] : ld_sys(slot(a, a.rank, c.parity, j) + i); };
        uint4 w;
        if constexpr (Exact) {
            w = sum_fp32_round_once<V>(a, src);
        } else {
            w = sum_ranks<V>(a, src);
        }
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

// Two-shot push, lossless bf16: sums in fp32, one rounding at the end.
template <typename V>
__device__ void two_shot_push_fp32acc(const ArArgs& a) {
    two_shot_push<V, true>(a);
}

// Staged push (after FlashInfer's PCIe-IPC ipc_rsag_ring_push_param_kernel):
// two-shot push whose two push phases are cut into nranks - 1 rounds. In
// round p this rank stores only into rank (rank + 1 + p) % nranks — a
// permutation, so every GPU has one outbound and one inbound stream — and a
// barrier of all ranks closes each round so the ranks stay in step.
// Reduce-scatter: round p stores chunk t of my input into slot `rank` of
// rank t; then I reduce chunk `rank` from my own buffer. All-gather: round p
// stores my reduced chunk into rank t's gather region; then copy out.
// 2 * (nranks - 1) barrier phases (NPHASE bounds them).
template <typename V>
__device__ void staged_push(const ArArgs& a) {
    Call c;
    if (!prologue(a, c)) return;
    const uint4* in = (const uint4*)a.input;
    uint4* out = (uint4*)a.output;
    const u32 n = a.nranks;
    for (u32 p = 0; p + 1 < n; ++p) {
        const u32 t = (a.rank + 1 + p) % n;
        uint4* dst = slot(a, t, c.parity, a.rank);
        GRID_LOOP(i, chunk_lo(a, t), chunk_lo(a, t + 1)) st_v4(dst + i, in[i]);
        if (!barrier(a, c, p, all_but_me(a))) return;
    }
    GRID_LOOP(i, chunk_lo(a, a.rank), chunk_lo(a, a.rank + 1)) {
        out[i] = sum_ranks<V>(a, [&](u32 j) { return j == a.rank ? in[i] : ld_sys(slot(a, a.rank, c.parity, j) + i); });
    }
    for (u32 p = 0; p + 1 < n; ++p) {
        const u32 t = (a.rank + 1 + p) % n;
        uint4* dst = gather(a, t, c.parity);
        GRID_LOOP(i, chunk_lo(a, a.rank), chunk_lo(a, a.rank + 1)) st_v4(dst + i, out[i]);
        if (!barrier(a, c, n - 1 + p, all_but_me(a))) return;
    }
    const uint4* got = gather(a, a.rank, c.parity);
    for (u32 k = 0; k < n; ++k) {
        if (k == a.rank) continue;
        GRID_LOOP(i, chunk_lo(a, k), chunk_lo(a, k + 1)) out[i] = ld_sys(got + i);
    }
    epilogue(a, c);
}

// Grid-stride loop with a fixed owner per element: vector i is always
// handled by thread i % (gridDim.x * blockDim.x), whatever range a loop
// covers. The island kernel re-reads, in one range, what it wrote in
// another (its output) across blocks that never synchronise with each
// other; with this mapping every such read is the same thread's own write.
// Every rank runs the same grid, so block b of a peer still touches exactly
// the vectors block b of this rank does (the barriers are per block).
__device__ __forceinline__ u64 first_owned(u64 lo) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    return lo + (t + stride - lo % stride) % stride;
}
#define OWNED_LOOP(i, lo, hi) for (u64 i = first_owned(lo); i < (hi); i += (u64)gridDim.x * blockDim.x)

// Island two-shot: islands of `group` consecutive ranks (a switch, else a
// socket), m = nranks / group of them; rank r is at position q = r % group
// of island g = r / group and owns island chunk q (1/group of the vectors),
// whose sub-chunk h (1/m of it) island h's rank at position q reduces.
//   1. island reduce-scatter by stores: chunk j of my input into slot
//      `rank` of the mate at position j; barrier with the mates; the island
//      sum of chunk q into my output (rounded to the element type);
//   2. cross reduce-scatter: sub-chunk h of that partial into slot `rank` of
//      the counterpart in island h; barrier with the counterparts; the sum
//      of sub-chunk g over the islands into my output;
//   3. cross all-gather: my final sub-chunk into every counterpart's gather
//      region; barrier; the others' sub-chunks from my gather region;
//   4. island all-gather: my final chunk q into every mate's gather region;
//      barrier; the mates' chunks from my gather region.
// Inside the island 2(k-1)/k of the message per rank, across islands
// 2(m-1)/m of one island chunk. bf16 rounds twice (the island sum and the
// sum over islands), as hierarchical does. With group == 1 stages 1 and 4
// vanish and the kernel is a two-shot push over all ranks.
template <typename V>
__device__ void island_two_shot(const ArArgs& a) {
    Call c;
    if (!prologue(a, c)) return;
    const uint4* in = (const uint4*)a.input;
    uint4* out = (uint4*)a.output;
    const u32 g = a.group;
    const u32 island = a.rank / g;
    const u32 pos = a.rank % g;
    const u32 m = a.nranks / g;
    u32 mates = 0, counterparts = 0;
    for (u32 k = 0; k < g; ++k) mates |= 1u << (island * g + k);
    mates &= ~(1u << a.rank);
    for (u32 h = 0; h < m; ++h) counterparts |= 1u << (h * g + pos);
    counterparts &= ~(1u << a.rank);
    auto c_lo = [&](u32 j) { return a.nvec * j / g; };
    const u64 q_lo = c_lo(pos), q_len = c_lo(pos + 1) - q_lo;
    auto d_lo = [&](u32 h) { return q_lo + q_len * h / m; };

    const uint4* partial = in;
    if (g > 1) {
        for (u32 j = 0; j < g; ++j) {
            if (j == pos) continue;
            uint4* dst = slot(a, island * g + j, c.parity, a.rank);
            OWNED_LOOP(i, c_lo(j), c_lo(j + 1)) st_v4(dst + i, in[i]);
        }
        if (!barrier(a, c, 0, mates)) return;
        OWNED_LOOP(i, q_lo, q_lo + q_len) {
            float acc[V::N];
            for (u32 k = 0; k < g; ++k) {
                const u32 j = island * g + k;
                const uint4 v = j == a.rank ? in[i] : ld_sys(slot(a, a.rank, c.parity, j) + i);
                if (k == 0) V::set(acc, v); else V::add(acc, v);
            }
            out[i] = V::pack(acc);
        }
        partial = out;
    }
    if (m > 1) {
        for (u32 h = 0; h < m; ++h) {
            if (h == island) continue;
            uint4* dst = slot(a, h * g + pos, c.parity, a.rank);
            OWNED_LOOP(i, d_lo(h), d_lo(h + 1)) st_v4(dst + i, partial[i]);
        }
        if (!barrier(a, c, 1, counterparts)) return;
        OWNED_LOOP(i, d_lo(island), d_lo(island + 1)) {
            float acc[V::N];
            for (u32 h = 0; h < m; ++h) {
                const u32 j = h * g + pos;
                const uint4 v = j == a.rank ? partial[i] : ld_sys(slot(a, a.rank, c.parity, j) + i);
                if (h == 0) V::set(acc, v); else V::add(acc, v);
            }
            out[i] = V::pack(acc);
        }
        for (u32 h = 0; h < m; ++h) {
            if (h == island) continue;
            uint4* dst = gather(a, h * g + pos, c.parity);
            OWNED_LOOP(i, d_lo(island), d_lo(island + 1)) st_v4(dst + i, out[i]);
        }
        if (!barrier(a, c, 2, counterparts)) return;
        const uint4* got = gather(a, a.rank, c.parity);
        for (u32 h = 0; h < m; ++h) {
            if (h == island) continue;
            OWNED_LOOP(i, d_lo(h), d_lo(h + 1)) out[i] = ld_sys(got + i);
        }
    }
    if (g > 1) {
        for (u32 j = 0; j < g; ++j) {
            if (j == pos) continue;
            uint4* dst = gather(a, island * g + j, c.parity);
            OWNED_LOOP(i, q_lo, q_lo + q_len) st_v4(dst + i, out[i]);
        }
        if (!barrier(a, c, 3, mates)) return;
        const uint4* got = gather(a, a.rank, c.parity);
        for (u32 j = 0; j < g; ++j) {
            if (j == pos) continue;
            OWNED_LOOP(i, c_lo(j), c_lo(j + 1)) out[i] = ld_sys(got + i);
        }
    }
    epilogue(a, c);
}

// Copy-engine ring, the kernel of step `a.step` (0 .. 2 * (nranks - 1) - 1).
// The host enqueues on each rank's stream, per step, a copy by the copy
// engine of one chunk into the next rank's memory, then this kernel:
//   reduce-scatter, step s < nranks - 1: chunk (rank - s) % n (my input at
//     s = 0, my partial sum after) into the next rank's slot 0, at that
//     chunk's offset;
//   all-gather, step n - 1 + t: chunk (rank + 1 - t) % n of my output into
//     the next rank's output (peer placement) or gather region (host).
// Stream order puts the kernel after the copy, so the copy is complete: its
// first thread fences and flags it to the next rank (flag `step` of the
// call's parity, block 0). Every block then waits for the previous rank's
// flag of the same step (local polling, or polls of host memory) and
//   reduce-scatter: adds the received chunk (rank - s - 1) % n to my input
//     into my output (fp32 sum of the two, rounded: bf16 rounds at every
//     step, as a ring does);
//   all-gather with host placement: copies the received chunk from my
//     gather region into my output (peer placement: the copy already put
//     it there; the kernel only waits).
// The last step's kernel ends the call (advances the call counter); the
// others leave it, so every kernel of a call reads the same epoch. One
// exchange copy is enough: a rank starts call e + 1 only after finishing
// call e, which needs the next rank's first all-gather copy of call e, which
// comes after that rank consumed every reduce-scatter slot of call e.
template <typename V>
__device__ void ce_ring_step(const ArArgs& a) {
    Call c;
    if (!prologue(a, c)) return;
    const uint4* in = (const uint4*)a.input;
    uint4* out = (uint4*)a.output;
    const u32 n = a.nranks;
    const u32 next = (a.rank + 1) % n, prev = (a.rank + n - 1) % n;
    const u32 step = a.step;
    __shared__ u32 s_fail;
    if (threadIdx.x == 0) {
        s_fail = 0;
        if (blockIdx.x == 0) {
            __threadfence_system();  // release: my copy (stream-ordered before) then my flag
            st_flag((u32*)a.flags[next] + flag_index(c.parity, step, 0, a.rank), c.epoch);
        }
        const u32* f = (const u32*)a.flags[a.rank] + flag_index(c.parity, step, 0, prev);
        if (!wait_flag(f, c.epoch, a.timeout_ns)) {
            s_fail = 1;
            *(volatile u32*)a.abort_word = 1;
            *(volatile u32*)a.status = 1u + step * 16u + prev;
        }
        __threadfence_system();  // acquire: the chunk is read after its flag
    }
    __syncthreads();
    if (s_fail) return;
    if (step + 1 < n) {
        const u32 k = (a.rank + 2 * n - step - 1) % n;
        const uint4* got = slot(a, a.rank, 0, 0);
        GRID_LOOP(i, chunk_lo(a, k), chunk_lo(a, k + 1)) {
            float acc[V::N];
            V::set(acc, in[i]);
            V::add(acc, ld_sys(got + i));
            out[i] = V::pack(acc);
        }
    } else if (a.host) {
        // host placement: the chunk arrived in my gather region in host memory
        const u32 k = (a.rank + 2 * n - (step - (n - 1))) % n;
        const uint4* got = gather(a, a.rank, 0);
        GRID_LOOP(i, chunk_lo(a, k), chunk_lo(a, k + 1)) out[i] = ld_sys(got + i);
    }
    if (step == 2 * (n - 1) - 1) epilogue(a, c);
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
AR_KERNELS(island_two_shot)
AR_KERNELS(staged_push)
AR_KERNELS(two_shot_push_fp32acc)
AR_KERNELS(ce_ring_step)
