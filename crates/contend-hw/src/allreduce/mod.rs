//! Allreduce on the hardware: the buffers of a team of ranks for the custom
//! kernels of `kernels/allreduce.cu`, and the measurement engine
//! (`measure.rs`) shared with the NCCL baseline (verify against the CPU
//! reference, time with events, the verify step eager and as a CUDA
//! graph), all under a watchdog.

#![allow(unsafe_code)]

use crate::devices::Devices;
use crate::driver::{self, DevMem, Func, Gpu, HostMem, Stream, StreamRef};
use crate::error::{EmulationError, HwError};
use contend_topo::Bytes;
use contend_workload::{Algorithm, Dtype, KernelConfig, Placement};

use crate::abi::{ArArgs, FLAG_BYTES};
/// Limits shared with kernels/allreduce.cu (defined in [`crate::abi`]).
pub use crate::abi::{MAX_BLOCKS, MAX_RANKS};

mod measure;
pub use measure::{Timing, default_repeats, time, verify_once, verify_step};

/// Memory of each rank, in device memory or in mapped host memory.
#[derive(Debug)]
enum Mem {
    Dev(Vec<DevMem>),
    Host(Vec<HostMem>),
}

impl Mem {
    fn alloc(
        devices: &Devices,
        ids: &[usize],
        placement: Placement,
        bytes: usize,
    ) -> Result<Mem, HwError> {
        Ok(match placement {
            Placement::Peer => Mem::Dev(
                ids.iter()
                    .map(|&i| DevMem::alloc(&devices.gpus[i], bytes))
                    .collect::<Result<_, _>>()?,
            ),
            Placement::Host => Mem::Host(
                ids.iter()
                    .map(|_| HostMem::alloc(&devices.gpus, bytes))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
    /// Address of rank `owner`'s memory as GPU `gpu` of the devices sees it.
    fn addr(&self, owner: usize, gpu: usize) -> u64 {
        match self {
            Mem::Dev(v) => v[owner].ptr,
            Mem::Host(v) => v[owner].dev[gpu],
        }
    }
}

/// The buffers of a team of ranks for the custom kernels.
#[derive(Debug)]
pub struct Team<'r> {
    pub devices: &'r Devices,
    /// Index among the devices of the GPU of each rank.
    pub ids: Vec<usize>,
    pub placement: Placement,
    /// Capacity of one slot: the largest message, bytes.
    pub cap: usize,
    /// Ranks per group for the hierarchical and island kernels.
    pub group: u32,
    /// Several ranks share a GPU (`--emulate-ranks`): each rank then has its
    /// own stream ([`Team::stream`]).
    pub emulated: bool,
    /// One stream per rank when emulated (empty otherwise: each rank uses its
    /// GPU's stream).
    streams: Vec<Stream>,
    input: Vec<DevMem>,
    output: Vec<DevMem>,
    exch: Mem,
    flags: Mem,
    counter: Vec<DevMem>,
    abort: Vec<DevMem>,
    status: HostMem,
}

impl<'r> Team<'r> {
    /// Allocates everything for messages up to `cap` bytes.
    pub fn new(
        devices: &'r Devices,
        ids: &[usize],
        placement: Placement,
        cap: usize,
        group: u32,
    ) -> Result<Team<'r>, HwError> {
        let n = ids.len();
        if n == 0 || n > MAX_RANKS {
            return Err(HwError::Unsupported(format!(
                "the kernels take 1 to {MAX_RANKS} ranks, not {n}"
            )));
        }
        if group == 0 || !n.is_multiple_of(group as usize) {
            return Err(HwError::Unsupported(format!(
                "hierarchical (island) groups of {group} do not divide {n} ranks"
            )));
        }
        // a GPU hosting several ranks: every rank its own stream
        let emulated = ids.iter().enumerate().any(|(k, a)| ids[..k].contains(a));
        let streams = if emulated {
            ids.iter()
                .map(|&i| devices.gpus[i].new_stream())
                .collect::<Result<Vec<_>, _>>()?
        } else {
            vec![]
        };
        if placement == Placement::Peer {
            for &a in ids {
                for &b in ids {
                    if a != b && !devices.p2p[a][b].access {
                        return Err(HwError::Unsupported(format!(
                            "peer placement needs P2P access, and GPU {a} cannot reach GPU {b} (use host placement)"
                        )));
                    }
                }
            }
        }
        let cap = cap.div_ceil(16) * 16;
        let exch_bytes = 2 * (n + 1) * cap;
        let dev = |bytes| {
            ids.iter()
                .map(|&i| DevMem::alloc(&devices.gpus[i], bytes))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Team {
            devices,
            ids: ids.to_vec(),
            placement,
            cap,
            group,
            emulated,
            streams,
            input: dev(cap)?,
            output: dev(cap)?,
            exch: Mem::alloc(devices, ids, placement, exch_bytes)?,
            flags: Mem::alloc(devices, ids, placement, FLAG_BYTES)?,
            counter: dev(8)?,
            abort: dev(4)?,
            status: HostMem::alloc(&devices.gpus, 4 * MAX_RANKS)?,
        })
    }

    /// The stream rank `rank` runs on: its own when emulated, else its GPU's.
    pub fn stream<'a>(&'a self, rank: usize, gpu: &'a Gpu) -> StreamRef<'a> {
        match self.streams.get(rank) {
            Some(s) => s.handle(),
            None => gpu.stream(),
        }
    }

    fn args(&self, rank: usize, bytes: usize) -> ArArgs {
        let gpu = self.ids[rank];
        let mut a = ArArgs::default();
        for j in 0..self.ids.len() {
            a.buf[j] = self.exch.addr(j, gpu);
            a.flags[j] = self.flags.addr(j, gpu);
        }
        a.input = self.input[rank].ptr;
        a.output = self.output[rank].ptr;
        a.counter = self.counter[rank].ptr;
        a.abort_word = self.abort[rank].ptr;
        a.status = self.status.dev[gpu] + 4 * rank as u64;
        a.nvec = (bytes / 16) as u64;
        a.region = self.cap as u64;
        a.timeout_ns = self.devices.timeouts.kernel_ns();
        a.rank = rank as u32;
        a.nranks = self.ids.len() as u32;
        a.group = self.group;
        a.host = u32::from(self.placement == Placement::Host);
        a
    }

    /// Sentences for ranks whose kernel gave up waiting.
    fn gave_up(&self) -> Option<String> {
        let v: Vec<String> = (0..self.ids.len())
            .filter_map(|r| {
                let s = self.status.read_u32(r);
                (s != 0).then(|| {
                    let (phase, peer) = ((s - 1) / 16, (s - 1) % 16);
                    format!(
                        "rank {r} waited longer than {} ms for rank {peer}'s flag of phase {phase}",
                        self.devices.timeouts.kernel_ms()
                    )
                })
            })
            .collect();
        (!v.is_empty()).then(|| v.join("; "))
    }
}

/// A collective launched on every rank of a team: ours or NCCL's.
pub trait Collective: Sync {
    /// `one-shot-pull`, ..., `nccl`.
    fn algorithm(&self) -> contend_workload::Measured;
    /// Index among the devices of the GPU of each rank.
    fn gpu_ids(&self) -> &[usize];
    fn input(&self, rank: usize) -> &DevMem;
    fn output(&self, rank: usize) -> &DevMem;
    /// Enqueues one allreduce of `bytes` on rank `rank`'s `stream` (a
    /// stream of `gpu`, the rank's GPU).
    fn launch(
        &self,
        rank: usize,
        gpu: &Gpu,
        bytes: usize,
        stream: StreamRef<'_>,
    ) -> Result<(), HwError>;
    /// Ranks that gave up waiting inside a kernel, as a sentence.
    fn gave_up(&self) -> Option<String> {
        None
    }
    /// The stream rank `rank` (on `gpu`) runs on.
    fn stream<'a>(&'a self, _rank: usize, gpu: &'a Gpu) -> StreamRef<'a> {
        gpu.stream()
    }
    /// Whether an allreduce of `bytes` may be launched at all (before any
    /// rank launches): emulated ranks whose grids would not all be resident
    /// at once are refused here.
    fn ready(&self, _bytes: usize) -> Result<(), HwError> {
        Ok(())
    }
    /// Whether the result must equal the fp32 sum rounded once, bit for bit
    /// ([`crate::verify::check_exact`]), rather than lie within the tolerance.
    fn exact(&self) -> bool {
        false
    }
    /// Facts for the record's `extra` (grid, protocol...).
    fn describe(&self, _bytes: usize, _extra: &mut contend_workload::Extra) {}
    /// Stream operations (copies, kernel launches) one allreduce enqueues
    /// on a rank's stream: one kernel, except for schedules of many.
    fn queued_ops(&self) -> usize {
        1
    }
}

/// Stream operations one GPU's queues take behind the `hold` kernel of
/// [`time`]. A host thread that enqueues more blocks in the driver until
/// the GPU drains some, and the hold then lets the streams go with the other
/// ranks' work not yet queued: their flag waits time out. Measured on the
/// lent H200 with `--emulate-ranks` (calibration/h200x1/emulate-*.log): the
/// copy-engine ring queued 2,880 operations per GPU at N = 4 and ran, and
/// 13,440 at N = 8 and hung.
pub(crate) const QUEUE_BUDGET: usize = 4096;

/// `(warmup, repeats)` for [`time`] within [`QUEUE_BUDGET`]: unchanged when
/// they fit, else both cut (warmup to at most a third of what fits), each at
/// least 1. `ranks_here` ranks share the GPU, each enqueuing `ops` stream
/// operations per allreduce and an event per timed repeat.
pub(crate) fn fit_queue(warmup: u32, repeats: u32, ops: usize, ranks_here: usize) -> (u32, u32) {
    let per = ops.max(1) * ranks_here.max(1);
    let need = |w: u32, r: u32| per * (w + 2 * r) as usize + ranks_here * (r as usize + 3);
    if need(warmup, repeats) <= QUEUE_BUDGET {
        return (warmup, repeats);
    }
    let fits = (QUEUE_BUDGET / (per + ranks_here)).max(3) as u32;
    let w = warmup.min(fits / 3).max(1);
    let r = ((fits - w) / 2).clamp(1, repeats.max(1));
    (w, r)
}

/// One of the custom kernels on a team.
#[derive(Debug)]
pub struct Custom<'t, 'r> {
    pub team: &'t Team<'r>,
    pub algorithm: Algorithm,
    pub dtype: Dtype,
    pub kernel: KernelConfig,
    /// The kernel of each rank's GPU.
    funcs: Vec<Func<'r>>,
    /// The kernel's name (`two_shot_push_bf16`).
    name: String,
    /// Blocks of this kernel one SM keeps resident (emulated teams only).
    blocks_per_sm: Option<u32>,
}

/// The kernel of kernels/allreduce.cu an algorithm runs, without its element
/// type (`two_shot_push`); the copy-engine ring's is the kernel of one step.
pub fn kernel_base(algorithm: Algorithm) -> String {
    match algorithm {
        Algorithm::CeRing => "ce_ring_step".into(),
        a => a.name().replace('-', "_"),
    }
}

/// Whether `ranks` kernels of `grid` blocks each, all spinning on each
/// other's flags, fit on one GPU at once: `ranks × grid ≤ (sms − reserve) ×
/// blocks_per_sm`. A kernel that waits for a block that cannot become
/// resident waits forever, so emulated ranks whose grids do not fit are
/// refused; the message names the numbers. `reserve` SMs are left free for
/// work the driver may run on SMs between kernels (the copy-engine ring's
/// device-to-device copies on one GPU).
pub fn coresident(
    kernel: &str,
    ranks: usize,
    grid: u32,
    sms: u32,
    blocks_per_sm: u32,
    reserve: u32,
) -> Result<(), EmulationError> {
    let need = ranks as u64 * u64::from(grid);
    let capacity = u64::from(sms.saturating_sub(reserve)) * u64::from(blocks_per_sm);
    if need <= capacity {
        return Ok(());
    }
    Err(EmulationError::NotCoresident {
        kernel: kernel.to_string(),
        ranks,
        grid,
        sms,
        blocks_per_sm,
        reserve,
    })
}

impl<'t, 'r> Custom<'t, 'r> {
    /// The kernel for `algorithm` and `dtype`, checked against `kernel`'s shape.
    pub fn new(
        team: &'t Team<'r>,
        algorithm: Algorithm,
        dtype: Dtype,
        kernel: KernelConfig,
    ) -> Result<Self, HwError> {
        let suffix = match dtype {
            Dtype::Bf16 => "bf16",
            Dtype::Fp32 => "f32",
            Dtype::Fp16 => {
                return Err(HwError::Unsupported(
                    "the kernels take bf16 and fp32, not fp16".into(),
                ));
            }
        };
        if !algorithm.has_custom_kernel() {
            return Err(HwError::Unsupported(format!(
                "{algorithm} has no kernel here (NCCL is its twin)"
            )));
        }
        let name = format!("{}_{suffix}", kernel_base(algorithm));
        let devices: &'r Devices = team.devices;
        let mut funcs = vec![];
        for &i in &team.ids {
            let g = &devices.gpus[i];
            let f = g.func(&name)?;
            let max = g.max_threads(f)?;
            if kernel.threads > max {
                return Err(HwError::Unsupported(format!(
                    "kernel {name} takes at most {max} threads per block, the scenario asks for {}",
                    kernel.threads
                )));
            }
            funcs.push(f);
        }
        let blocks_per_sm = if team.emulated {
            let g = &devices.gpus[team.ids[0]];
            Some(g.max_active_blocks(funcs[0], kernel.threads)?)
        } else {
            None
        };
        Ok(Custom {
            team,
            algorithm,
            dtype,
            kernel,
            funcs,
            name,
            blocks_per_sm,
        })
    }

    /// Blocks actually launched for `bytes`: the configured count, or fewer
    /// when there is less work than that (every rank uses the same grid) —
    /// [`contend_workload::launch_grid`], the one definition the simulator
    /// shares.
    pub fn grid(&self, bytes: usize) -> u32 {
        contend_workload::launch_grid(
            self.algorithm,
            self.team.ids.len(),
            self.team.group as usize,
            Bytes(bytes as u64),
            self.kernel,
        )
    }

    /// The copy-engine ring's schedule for one allreduce on rank `rank`: per
    /// step a copy of one chunk into the next rank's memory
    /// (cuMemcpyPeerAsync between two GPUs, cuMemcpyAsync into host memory or
    /// within one GPU), then the step's kernel (kernels/allreduce.cu,
    /// `ce_ring_step`), all on the rank's stream.
    fn launch_ce_ring(
        &self,
        rank: usize,
        gpu: &Gpu,
        bytes: usize,
        stream: StreamRef<'_>,
    ) -> Result<(), HwError> {
        let team = self.team;
        let n = team.ids.len();
        let next = (rank + 1) % n;
        let me = team.ids[rank];
        let next_gpu = &team.devices.gpus[team.ids[next]];
        let host = team.placement == Placement::Host;
        // chunk k: vectors [nvec * k / n, nvec * (k + 1) / n), as chunk_lo
        let nvec = (bytes / 16) as u64;
        let lo = |k: usize| nvec * k as u64 / n as u64 * 16;
        let grid = self.grid(bytes);
        for step in 0..2 * (n - 1) {
            let (k, src, dst) = if step < n - 1 {
                // reduce-scatter: chunk rank - step into the next rank's slot 0
                let k = (rank + n - step) % n;
                let src = if step == 0 {
                    team.input[rank].ptr
                } else {
                    team.output[rank].ptr
                };
                (k, src, team.exch.addr(next, me))
            } else {
                // all-gather: chunk rank + 1 - t into the next rank's output
                // (peer) or gather region (host)
                let t = step - (n - 1);
                let k = (rank + 1 + n - t) % n;
                let dst = if host {
                    team.exch.addr(next, me) + (n * team.cap) as u64
                } else {
                    team.output[next].ptr
                };
                (k, team.output[rank].ptr, dst)
            };
            let len = (lo(k + 1) - lo(k)) as usize;
            if len > 0 {
                let (dst, src) = (dst + lo(k), src + lo(k));
                // SAFETY: both ranges lie inside the team's allocations as
                // this rank's GPU addresses them: inputs and outputs hold
                // `cap` >= `bytes` bytes (checked by the caller), slot 0 and
                // the gather region of an exchange buffer `cap` bytes each,
                // and chunk k ends at `bytes`. The team outlives the stream's
                // work (every caller waits for it), and the ring's flags keep
                // the destination free of other writers (kernels/allreduce.cu).
                unsafe {
                    if host || team.ids[next] == me {
                        // host memory, or both ranks on one GPU (emulated)
                        driver::copy_async(dst, src, len, stream)?;
                    } else {
                        driver::copy_peer_raw_async(dst, next_gpu, src, gpu, len, stream)?;
                    }
                }
            }
            let mut a = team.args(rank, bytes);
            a.step = step as u32;
            // the all-gather kernels only wait, unless they copy from host memory
            let blocks = if step >= n - 1 && !host { 1 } else { grid };
            // SAFETY: as for every allreduce kernel (see `launch`); the ring
            // kernel reads slot 0 and the gather region of its own exchange
            // buffer and flag `step` < 2 * (MAX_RANKS - 1) <= NPHASE.
            unsafe {
                gpu.launch(self.funcs[rank], blocks, self.kernel.threads, stream, (&a,))?;
            }
        }
        Ok(())
    }
}

impl Collective for Custom<'_, '_> {
    fn algorithm(&self) -> contend_workload::Measured {
        contend_workload::Measured::Allreduce(self.algorithm)
    }
    fn gpu_ids(&self) -> &[usize] {
        &self.team.ids
    }
    fn input(&self, rank: usize) -> &DevMem {
        &self.team.input[rank]
    }
    fn output(&self, rank: usize) -> &DevMem {
        &self.team.output[rank]
    }
    fn queued_ops(&self) -> usize {
        if self.algorithm == Algorithm::CeRing {
            // a copy and a kernel per step, 2(N - 1) steps
            4 * (self.team.ids.len() - 1)
        } else {
            1
        }
    }
    fn launch(
        &self,
        rank: usize,
        gpu: &Gpu,
        bytes: usize,
        stream: StreamRef<'_>,
    ) -> Result<(), HwError> {
        if !bytes.is_multiple_of(16) || bytes > self.team.cap {
            return Err(HwError::Unsupported(format!(
                "message of {bytes} B: the kernels take multiples of 16 B up to {} B",
                self.team.cap
            )));
        }
        if self.algorithm == Algorithm::CeRing {
            return self.launch_ce_ring(rank, gpu, bytes, stream);
        }
        let a: ArArgs = self.team.args(rank, bytes);
        // SAFETY: the allreduce kernels take one `ArArgs` by value. Its
        // addresses are the team's own allocations as this rank's GPU sees
        // them (peer access checked in Team::new, host memory mapped into
        // every GPU), sized for `cap` >= `bytes` (checked above): input and
        // output `cap` bytes, exchange buffers 2 * (nranks + 1) slots of
        // `cap`, flag areas FLAG_BYTES for `grid` <= MAX_BLOCKS blocks and
        // nranks <= MAX_RANKS (Team::new), counter 8 and abort word 4 bytes,
        // status one u32 per rank. The team outlives the kernels: every
        // caller waits for them before it returns.
        unsafe {
            gpu.launch(
                self.funcs[rank],
                self.grid(bytes),
                self.kernel.threads,
                stream,
                (&a,),
            )
        }
    }
    fn gave_up(&self) -> Option<String> {
        self.team.gave_up()
    }
    fn stream<'a>(&'a self, rank: usize, gpu: &'a Gpu) -> StreamRef<'a> {
        self.team.stream(rank, gpu)
    }
    fn ready(&self, bytes: usize) -> Result<(), HwError> {
        let Some(per_sm) = self.blocks_per_sm else {
            return Ok(());
        };
        let sms = self.team.devices.gpus[self.team.ids[0]].sms;
        let reserve = u32::from(self.algorithm == Algorithm::CeRing);
        coresident(
            &self.name,
            self.team.ids.len(),
            self.grid(bytes),
            sms,
            per_sm,
            reserve,
        )
        .map_err(HwError::from)
    }
    fn exact(&self) -> bool {
        self.algorithm == Algorithm::TwoShotPushFp32Acc
    }
    fn describe(&self, bytes: usize, extra: &mut contend_workload::Extra) {
        let k = &mut extra.kernel;
        k.blocks = Some(self.kernel.blocks);
        k.threads = Some(self.kernel.threads);
        k.grid = Some(self.grid(bytes));
        k.group = Some(contend_workload::GroupTag::Ranks(self.team.group));
        if self.team.emulated {
            k.emulated = Some(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What ran on the lent H200 keeps its counts; the copy-engine ring of 8
    /// emulated ranks (28 operations per allreduce each, 13,440 in all,
    /// which hung) is cut to fit, and what is cut still fits.
    #[test]
    fn queued_work_fits_the_budget() {
        assert_eq!(fit_queue(20, 20, 1, 8), (20, 20));
        assert_eq!(fit_queue(20, 20, 12, 4), (20, 20));
        let (w, r) = fit_queue(20, 20, 28, 8);
        assert!(w >= 1 && (1..20).contains(&r), "{w} {r}");
        assert!(8 * 28 * (w + 2 * r) as usize + 8 * (r as usize + 3) <= QUEUE_BUDGET);
        // never more than asked
        assert_eq!(fit_queue(2, 1, 1000, 8), (1, 1));
    }

    /// Every custom algorithm names a kernel the backend loads, in both types.
    #[test]
    fn every_custom_algorithm_has_its_kernels() {
        let loaded = crate::kernels::entry_points("allreduce.cu");
        for a in Algorithm::ALL.iter().filter(|a| a.has_custom_kernel()) {
            for t in ["bf16", "f32"] {
                let k = format!("{}_{t}", kernel_base(*a));
                assert!(loaded.contains(&k.as_str()), "{a}: no kernel {k}");
            }
        }
    }

    #[test]
    fn emulated_grids_must_all_be_resident() {
        // 8 ranks x 16 blocks on a 132-SM GPU at one block per SM: fits
        assert_eq!(coresident("k", 8, 16, 132, 1, 0), Ok(()));
        assert_eq!(coresident("k", 8, 16, 132, 1, 1), Ok(()));
        // 8 x 17 = 136 > 132: refused, with the numbers
        let e = coresident("two_shot_push_bf16", 8, 17, 132, 1, 0)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "8 emulated ranks x 17 blocks of two_shot_push_bf16 = 136 blocks, but one GPU keeps at most 132 resident (132 SMs x 1 blocks per SM)"
            ),
            "{e}"
        );
        // two blocks per SM double the room
        assert_eq!(coresident("k", 8, 33, 132, 2, 0), Ok(()));
        // the copy-engine ring leaves an SM for the driver's copies
        let e = coresident("ce_ring_step_bf16", 4, 33, 132, 1, 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("131 of its 132 SMs (1 left for the driver's copies)"),
            "{e}"
        );
        // a kernel that cannot run at all
        assert!(coresident("k", 2, 1, 132, 0, 0).is_err());
    }
}
