//! The machine as the backend drives it: every visible GPU opened in one
//! process, peer access enabled where the driver allows it, the kernels
//! compiled once per architecture and loaded into every GPU, the time limits
//! read once, and a thread per GPU for anything that must run on all of them
//! at once (kernels that wait on each other's flags must be launched and
//! waited on concurrently).

use crate::driver::{self, Gpu, P2p};
use crate::error::HwError;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// All GPUs of the host, ready to run kernels.
#[derive(Debug)]
pub struct Devices {
    pub gpus: Vec<Gpu>,
    /// `p2p[i][j]`: what the driver says about GPU i reaching GPU j.
    pub p2p: Vec<Vec<P2p>>,
    pub cuda_version: String,
    /// The time limits, read from the environment when the devices were opened.
    pub timeouts: Timeouts,
}

/// The time limits of a run, read from the environment once (when the devices
/// were opened) and checked: a value that is not a whole number of milliseconds
/// from 1 to [`Timeouts::MAX_MS`] is an error naming the variable, not a
/// silent default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Longest a kernel's flag wait may spin before the kernel gives up
    /// (`CONTEND_HW_TIMEOUT_MS`, default 2000 ms).
    pub kernel: Duration,
    /// Longest the host waits for one batch of GPU work before it reports a
    /// hang (`CONTEND_HW_WATCHDOG_MS`, default 30000 ms).
    pub watchdog: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            kernel: Duration::from_millis(2000),
            watchdog: Duration::from_millis(30_000),
        }
    }
}

impl Timeouts {
    /// The variable of [`Timeouts::kernel`].
    pub const KERNEL_VAR: &'static str = "CONTEND_HW_TIMEOUT_MS";
    /// The variable of [`Timeouts::watchdog`].
    pub const WATCHDOG_VAR: &'static str = "CONTEND_HW_WATCHDOG_MS";
    /// The longest limit either variable may give: one hour.
    pub const MAX_MS: u64 = 3_600_000;

    /// Reads both variables of the process environment.
    pub fn from_env() -> Result<Timeouts, HwError> {
        Timeouts::from_lookup(|var| std::env::var_os(var))
    }

    /// Reads both variables through `get` (unset: the default).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Timeouts, HwError> {
        let d = Timeouts::default();
        let read = |var: &'static str, default: Duration| match get(var) {
            None => Ok(default),
            Some(v) => parse_ms(var, &v).map(Duration::from_millis),
        };
        Ok(Timeouts {
            kernel: read(Timeouts::KERNEL_VAR, d.kernel)?,
            watchdog: read(Timeouts::WATCHDOG_VAR, d.watchdog)?,
        })
    }

    /// The kernels' flag-wait limit in nanoseconds (what they are passed).
    pub fn kernel_ns(&self) -> u64 {
        self.kernel.as_nanos() as u64
    }
    pub fn kernel_ms(&self) -> u64 {
        self.kernel.as_millis() as u64
    }
    pub fn watchdog_ms(&self) -> u64 {
        self.watchdog.as_millis() as u64
    }
}

/// Milliseconds from the value of `var`.
fn parse_ms(var: &'static str, value: &std::ffi::OsStr) -> Result<u64, HwError> {
    let bad = |why: &'static str| HwError::Env {
        var,
        value: value.to_string_lossy().into_owned(),
        why,
    };
    let text = value
        .to_str()
        .ok_or_else(|| bad("it must be a whole number of milliseconds"))?;
    let text = text.trim();
    let ms: u64 = text.parse().map_err(|_| {
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            bad("it must be at most 3600000 ms (one hour)")
        } else {
            bad("it must be a whole number of milliseconds")
        }
    })?;
    if ms == 0 {
        return Err(bad("it must be at least 1 ms"));
    }
    if ms > Timeouts::MAX_MS {
        return Err(bad("it must be at most 3600000 ms (one hour)"));
    }
    Ok(ms)
}

impl Devices {
    /// Opens every GPU; with `kernels`, compiles and loads the kernels too.
    pub fn open(kernels: bool) -> Result<Devices, HwError> {
        let n = driver::init()?;
        let timeouts = Timeouts::from_env()?;
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
        Ok(Devices {
            gpus,
            p2p,
            cuda_version,
            timeouts,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn with(kernel: Option<&str>, watchdog: Option<&str>) -> Result<Timeouts, HwError> {
        Timeouts::from_lookup(|var| match var {
            "CONTEND_HW_TIMEOUT_MS" => kernel.map(OsString::from),
            "CONTEND_HW_WATCHDOG_MS" => watchdog.map(OsString::from),
            other => panic!("unexpected variable {other}"),
        })
    }

    #[test]
    fn timeouts_default_when_unset() {
        let t = with(None, None).unwrap();
        assert_eq!(t, Timeouts::default());
        assert_eq!(t.kernel_ns(), 2_000_000_000);
        assert_eq!(t.kernel_ms(), 2000);
        assert_eq!(t.watchdog_ms(), 30_000);
    }

    #[test]
    fn timeouts_read_milliseconds() {
        let t = with(Some("500"), Some(" 20000\n")).unwrap();
        assert_eq!(t.kernel, Duration::from_millis(500));
        assert_eq!(t.kernel_ns(), 500_000_000);
        assert_eq!(t.watchdog, Duration::from_millis(20_000));
        assert_eq!(with(Some("3600000"), None).unwrap().kernel_ms(), 3_600_000);
    }

    #[test]
    fn bad_timeouts_name_the_variable() {
        let cases = [
            (
                Some("abc"),
                None,
                "CONTEND_HW_TIMEOUT_MS=\"abc\"",
                "whole number",
            ),
            (
                Some("1.5"),
                None,
                "CONTEND_HW_TIMEOUT_MS=\"1.5\"",
                "whole number",
            ),
            (Some(""), None, "CONTEND_HW_TIMEOUT_MS=\"\"", "whole number"),
            (
                Some("-1"),
                None,
                "CONTEND_HW_TIMEOUT_MS=\"-1\"",
                "whole number",
            ),
            (
                None,
                Some("0"),
                "CONTEND_HW_WATCHDOG_MS=\"0\"",
                "at least 1 ms",
            ),
            (
                None,
                Some("3600001"),
                "CONTEND_HW_WATCHDOG_MS=\"3600001\"",
                "at most 3600000 ms",
            ),
            (
                None,
                Some("99999999999999999999999"),
                "CONTEND_HW_WATCHDOG_MS=",
                "at most 3600000 ms",
            ),
        ];
        for (k, w, var, why) in cases {
            let e = with(k, w).unwrap_err().to_string();
            assert!(e.starts_with(var), "{e}");
            assert!(e.contains(why), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
