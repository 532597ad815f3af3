//! The named choices a scenario makes: algorithm, placement, fidelity, dtype,
//! launch mode. The names are the ones the simulator and the hardware backend
//! both use.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $var),+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            pub fn name(self) -> &'static str {
                match self { $($name::$var => $s),+ }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.pad(self.name()) }
        }
        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                $name::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    format!("unknown {} `{s}` (one of: {})", stringify!($name).to_lowercase(),
                        $name::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", "))
                })
            }
        }
    };
}

named_enum!(
    /// An allreduce algorithm.
    Algorithm {
        /// Every rank loads every peer's input and reduces locally.
        OneShotPull = "one-shot-pull",
        /// Every rank stores its input into every peer; receivers poll locally.
        OneShotPush = "one-shot-push",
        /// Reduce-scatter by loads, barrier, all-gather by loads.
        TwoShotPull = "two-shot-pull",
        /// Reduce-scatter by stores, barrier, all-gather by stores.
        TwoShotPush = "two-shot-push",
        /// NCCL-style ring, LL protocol (8 B flag with every 8 B of data).
        RingLl = "ring-ll",
        /// NCCL-style ring, Simple protocol (data, fence, then a flag).
        RingSimple = "ring-simple",
        /// Reduce inside a switch or socket first, then across groups.
        Hierarchical = "hierarchical",
        /// Island two-shot: reduce-scatter inside each island (a switch, else
        /// a socket), the shards reduced across islands by the same-position
        /// ranks, all-gather inside the island (vLLM's island-aware
        /// hierarchical allreduce; FlashInfer's and b12x's island kernels).
        IslandTwoShot = "island-two-shot",
        /// Two-shot push in staged rounds: in round r rank i stores only into
        /// rank (i + r) mod N, a barrier between rounds, so every rank has one
        /// outbound and one inbound peer at a time (FlashInfer's PCIe-IPC
        /// staged push).
        StagedPush = "staged-push",
        /// Ring reduce-scatter and all-gather whose data the copy engines move;
        /// the SMs only reduce locally (b12x's DMA ring, FlashInfer's CE ring).
        CeRing = "ce-ring",
        /// Two-shot push whose sums are taken in fp32 and rounded to the
        /// element type once, checked bit for bit (same traffic as two-shot push).
        TwoShotPushFp32Acc = "two-shot-push-fp32acc",
        /// What NCCL itself runs on the topology, for the scenario's NCCL
        /// version and environment (`[nccl]`): its transport per peer
        /// (P2P, or SHM through host memory), channels, ring or tree, and
        /// per call the protocol its cost model picks (contend-nccl's
        /// replica), lowered with each protocol's costs.
        Nccl = "nccl",
    }
);

impl Algorithm {
    /// Algorithms with a CUDA kernel written in this repository (the rings
    /// and `nccl` are NCCL's; the hardware backend measures NCCL itself as
    /// their twin).
    pub fn has_custom_kernel(self) -> bool {
        !matches!(
            self,
            Algorithm::RingLl | Algorithm::RingSimple | Algorithm::Nccl
        )
    }
}

named_enum!(
    /// Where the exchange buffers live.
    Placement {
        /// In each rank's device memory; peers reach it by P2P.
        Peer = "peer",
        /// In pinned host memory mapped into every GPU.
        Host = "host",
    }
);

named_enum!(
    /// Simulator fidelity.
    Fidelity {
        /// Every TLP is an event (the reference).
        Tlp = "tlp",
        /// Max-min fair fluid flows (fast).
        Flow = "flow",
    }
);

named_enum!(
    /// Element type of the reduced tensor.
    Dtype {
        Bf16 = "bf16",
        Fp16 = "fp16",
        Fp32 = "fp32",
    }
);

impl Dtype {
    pub fn size(self) -> u64 {
        match self {
            Dtype::Bf16 | Dtype::Fp16 => 2,
            Dtype::Fp32 => 4,
        }
    }
}

named_enum!(
    /// How kernels are launched: eager (a launch call per kernel), in one
    /// CUDA graph (the step captured whole, replayed: a graph node per
    /// kernel), or a graph per call (each collective captured on its own,
    /// the graph launched per call, as p2pmark times its custom allreduce).
    LaunchMode {
        Eager = "eager",
        Graph = "graph",
        GraphEach = "graph-each",
    }
);

named_enum!(
    /// Who launches the ranks' kernels in eager mode. One process per rank
    /// (torchrun, vLLM, SGLang) launches each rank's kernel from its own
    /// host thread, all at once; one thread for every GPU (nccl-tests `-g
    /// N`, p2pmark, a single-process benchmark) launches them one after
    /// another, call after call, so back-to-back calls cannot come faster
    /// than one launch per rank each (`launcher.rs` in contend-sim).
    Launcher {
        PerRank = "per-rank",
        OneThread = "one-thread",
    }
);

named_enum!(
    /// What a transfer stream of a scenario does. `from` is always the GPU
    /// whose engine (copy engine or SMs) drives the stream; the op says
    /// which way the bytes go.
    ///
    /// In CUDA terms: `copy` is `cudaMemcpyPeerAsync(dst on to, src on
    /// from)` enqueued on a stream of `from` (a push), or a device-to-host
    /// copy when `to` is host memory (D2H); `copy-read` is
    /// `cudaMemcpyPeerAsync(dst on from, src on to)` on a stream of `from`
    /// (a pull), or a host-to-device copy when `to` is host memory — H2D as
    /// the GPU sees it: its copy engine reads host memory.
    TransferOp {
        /// The copy engine of `from` writes `from`'s memory into `to`'s
        /// (posted writes from `from`).
        Copy = "copy",
        /// The copy engine of `from` reads `to`'s memory into its own
        /// (read requests from `from`, completions back from `to`).
        CopyRead = "copy-read",
        /// SM loads by `from` of `to`'s memory.
        Load = "load",
        /// SM stores by `from` into `to`'s memory.
        Store = "store",
        /// Flag ping-pong: `from` writes a flag at `to`, `to` answers; `iterations` round trips.
        PingPong = "ping-pong",
    }
);

impl TransferOp {
    /// Whether the op moves bytes (every op but `ping-pong`): its records
    /// carry a bandwidth and patterns may use it.
    pub fn moves_bytes(self) -> bool {
        self != TransferOp::PingPong
    }
}

named_enum!(
    /// A pattern of transfer streams (`[[workload.pattern]]`), expanded into
    /// one stream per ordered pair of GPUs it names.
    PatternKind {
        /// Every ordered pair of `gpus`.
        AllToAll = "all-to-all",
        /// GPU i to GPU (i + distance) mod n over `gpus` (p2pmark's staggered writes).
        Stagger = "stagger",
        /// `source` to every other GPU of `gpus`.
        OneToMany = "one-to-many",
        /// Every other GPU of `gpus` to `sink`.
        ManyToOne = "many-to-one",
        /// Both directions of each of `pairs`.
        BidirectionalPairs = "bidirectional-pairs",
    }
);

named_enum!(
    /// A microbenchmark of the hardware backend (`contend hw probe`), by its label.
    ProbeOp {
        /// Copy engine, pinned host memory to device.
        CopyH2d = "copy-h2d",
        /// Copy engine, device to pinned host memory.
        CopyD2h = "copy-d2h",
        /// Copy engine, device to a peer device.
        CopyPeer = "copy-peer",
        /// Copy engine, a peer device's memory pulled into this device's
        /// (`cudaMemcpyPeerAsync` on a stream of the destination).
        CopyPeerRead = "copy-peer-read",
        /// SM loads of host or peer memory.
        SmLoad = "sm-load",
        /// SM stores into host or peer memory.
        SmStore = "sm-store",
        /// Flag round trips.
        PingPong = "ping-pong",
        /// NCCL's allreduce at sizes below any held-out sweep (4 B to
        /// 256 B) over every GPU: what one call costs when no data moves
        /// to speak of — the latency of NCCL's steps.
        NcclLatency = "nccl-latency",
        /// Empty kernels launched back to back from the host: the per-launch cost.
        LaunchEager = "launch-eager",
        /// Empty kernels replayed as one CUDA graph: the per-node cost.
        LaunchGraph = "launch-graph",
        /// A CUDA graph of one empty kernel launched back to back from the
        /// host: the per-call cost of a graph launched per collective
        /// (p2pmark's custom allreduce, a benchmark that captures one call).
        LaunchGraphEach = "launch-graph-each",
    }
);

named_enum!(
    /// Where a probe stream goes (`extra.stream.target`).
    ProbeTarget {
        /// Host memory.
        Host = "host",
        /// Another GPU's memory.
        Peer = "peer",
        /// The GPU's own memory.
        Local = "local",
    }
);

named_enum!(
    /// Where a ping-pong's flags live (`extra.stream.flags`).
    FlagMemory {
        /// Each GPU polls its own memory; the other side writes into it.
        OwnMemory = "each GPU's own memory",
        /// Both flags in host memory.
        Host = "host memory",
    }
);

impl ProbeOp {
    /// An SM kernel (its per-op time includes one kernel launch).
    pub fn is_kernel(self) -> bool {
        matches!(self, ProbeOp::SmLoad | ProbeOp::SmStore)
    }
    /// A probe of kernel launches (per-op time: one launch).
    pub fn is_launch(self) -> bool {
        matches!(
            self,
            ProbeOp::LaunchEager | ProbeOp::LaunchGraph | ProbeOp::LaunchGraphEach
        )
    }
}

named_enum!(
    /// The kind of workload a result comes from.
    WorkloadKind {
        Allreduce = "allreduce",
        VerifyStep = "verify-step",
        Transfer = "transfer",
    }
);
