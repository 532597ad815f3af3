//! The machine as the backend drives it: every visible GPU opened in one
//! process, peer access enabled where the driver allows it, the kernels
//! compiled once per architecture and loaded into every GPU, and a thread per GPU for anything that must run on all of them at
//! once (kernels that wait on each other's flags must be launched and waited
//! on concurrently).

use crate::driver::{self, Gpu, P2p};
use crate::error::HwError;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// All GPUs of the host, ready to run kernels.
#[derive(Debug)]
pub struct Rig {
    pub gpus: Vec<Gpu>,
    /// `p2p[i][j]`: what the driver says about GPU i reaching GPU j.
    pub p2p: Vec<Vec<P2p>>,
    pub cuda_version: String,
}

/// Longest a kernel's flag wait may spin before the kernel gives up
/// (`CONTEND_HW_TIMEOUT_MS`, default 2000).
pub fn kernel_timeout_ns() -> u64 {
    std::env::var("CONTEND_HW_TIMEOUT_MS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(2000)
        * 1_000_000
}

/// Longest the host waits for one batch of GPU work before it reports a hang
/// (`CONTEND_HW_WATCHDOG_MS`, default 30000).
pub fn watchdog() -> Duration {
    Duration::from_millis(
        std::env::var("CONTEND_HW_WATCHDOG_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(30_000),
    )
}

impl Rig {
    /// Opens every GPU; with `kernels`, compiles and loads the kernels too.
    pub fn open(kernels: bool) -> Result<Rig, HwError> {
        let n = driver::init()?;
        let cuda_version = driver::driver_cuda_version()?;
        let mut gpus = Vec::with_capacity(n);
        for i in 0..n {
            gpus.push(Gpu::open(i)?);
        }
        let mut p2p = vec![vec![P2p::default(); n]; n];
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    p2p[i][j] = driver::p2p(&gpus[i], &gpus[j])?;
                    if p2p[i][j].access {
                        driver::enable_peer(&gpus[i], &gpus[j])?;
                    }
                }
            }
        }
        if kernels {
            if !crate::kernels::nvrtc_present() {
                return Err(HwError::NoNvrtc);
            }
            // Compiled once per distinct architecture, loaded by every GPU
            // of it into its own context.
            let mut compiled: Vec<crate::kernels::Ptx> = Vec::new();
            for g in &mut gpus {
                let arch = g.arch()?;
                let i = match compiled.iter().position(|p| p.arch == arch) {
                    Some(i) => i,
                    None => {
                        compiled.push(crate::kernels::compile_all(arch)?);
                        compiled.len() - 1
                    }
                };
                g.load_kernels(&compiled[i])?;
            }
        }
        Ok(Rig {
            gpus,
            p2p,
            cuda_version,
        })
    }

    pub fn len(&self) -> usize {
        self.gpus.len()
    }
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    /// Runs `f(k, gpu, barrier)` for each GPU index `ids[k]` on its own
    /// thread (context bound), all started together; the barrier lets the
    /// threads line up again inside `f` (an error on one thread opens it for
    /// the others, whose `wait` then fails). Returns the results in order, or
    /// the first error (a fatal one preferred).
    pub fn par<T: Send>(
        &self,
        ids: &[usize],
        f: impl Fn(usize, &Gpu, &Gate) -> Result<T, HwError> + Sync,
    ) -> Result<Vec<T>, HwError> {
        let barrier = Gate::new(ids.len());
        let results: Vec<Result<T, HwError>> = std::thread::scope(|s| {
            let handles: Vec<_> = ids
                .iter()
                .enumerate()
                .map(|(k, &id)| {
                    let g = &self.gpus[id];
                    let (f, b) = (&f, &barrier);
                    s.spawn(move || {
                        let r = g.bind().and_then(|_| f(k, g, b));
                        if r.is_err() {
                            b.abort();
                        }
                        r
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(HwError::Unsupported("a GPU thread panicked".into()))
                    })
                })
                .collect()
        });
        let mut out = Vec::with_capacity(results.len());
        let mut first_err: Option<HwError> = None;
        for r in results {
            match r {
                Ok(v) => out.push(v),
                Err(e) => {
                    let rank = |e: &HwError| match e {
                        HwError::Aborted => 0,
                        e if e.is_fatal() => 2,
                        _ => 1,
                    };
                    let replace = first_err.as_ref().is_none_or(|prev| rank(&e) > rank(prev));
                    if replace {
                        first_err = Some(e);
                    }
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

/// A reusable barrier for the GPU threads that one failing thread can break
/// (a plain `std::sync::Barrier` would leave the others waiting forever).
#[derive(Debug)]
pub struct Gate {
    n: usize,
    state: Mutex<(usize, u64, bool)>,
    cv: Condvar,
}

impl Gate {
    pub fn new(n: usize) -> Gate {
        Gate {
            n,
            state: Mutex::new((0, 0, false)),
            cv: Condvar::new(),
        }
    }

    /// Waits until all `n` threads arrived; fails once another thread failed.
    pub fn wait(&self) -> Result<(), HwError> {
        let broken = || HwError::Aborted;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.2 {
            return Err(broken());
        }
        st.0 += 1;
        if st.0 == self.n {
            st.0 = 0;
            st.1 += 1;
            self.cv.notify_all();
            return Ok(());
        }
        let generation = st.1;
        while st.1 == generation && !st.2 {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if st.1 == generation {
            Err(broken())
        } else {
            Ok(())
        }
    }

    /// Breaks the gate for every waiter, now and later.
    pub fn abort(&self) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.2 = true;
        self.cv.notify_all();
    }
}
