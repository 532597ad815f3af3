//! The thin, explicit layer over the CUDA driver API (through cudarc's `sys`
//! bindings, loaded dynamically): GPUs with their primary context, a stream
//! and the kernels; device and mapped-host memory; timing events; graphs.
//!
//! Everything that can block checks a deadline, and nothing here panics on
//! a machine without a driver: [`init`] looks for libcuda before the first
//! call.
//!
//! Handles are typed and borrowed from what owns them ([`StreamRef`] from a
//! [`Gpu`] or a [`Stream`], [`Func`] from a [`Gpu`]), so the safe functions
//! here cannot be handed a dangling stream or kernel. What the types cannot
//! check is `unsafe` with its contract stated: launching a kernel
//! ([`Gpu::launch`]: arguments that match its signature, device addresses it
//! may use) and copies between raw addresses ([`copy_htod_async`],
//! [`copy_dtoh_async`]).

#![allow(unsafe_code)]

use crate::error::HwError;
use crate::kernels;
use cudarc::driver::sys;
use std::collections::HashMap;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod copy;
mod event;
mod graph;
mod load;
mod memory;

pub use self::copy::{
    P2p, copy_async, copy_dtoh_async, copy_htod_async, copy_peer_async, copy_peer_raw_async,
    enable_peer, p2p,
};
pub use self::event::Event;
pub use self::graph::Graph;
pub use self::load::{REQUIRED_SYMBOLS, driver_cuda_version, driver_present, init};
pub use self::memory::{DevMem, HostMem};
pub use sys::CUdeviceptr;

/// Set after a hang: GPUs may still run a kernel, so destructors leak rather
/// than call into the driver (which could block) and the process exits.
static POISONED: AtomicBool = AtomicBool::new(false);

pub(crate) fn poison() {
    POISONED.store(true, Ordering::SeqCst);
}
pub fn is_poisoned() -> bool {
    POISONED.load(Ordering::SeqCst)
}

fn err_name(r: sys::CUresult) -> String {
    format!("{r:?}")
}

/// Turns a driver status into a `Result`.
pub(crate) fn ck(r: sys::CUresult, call: &'static str) -> Result<(), HwError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(HwError::Driver {
            call,
            code: err_name(r),
        })
    }
}

/// Sets `var` to `value` for this process unless it is already set. Call
/// from the main thread before any other thread exists (environment changes
/// are not thread safe) and before the driver initialises if it reads `var`.
pub fn set_env_if_unset(var: &str, value: &str) {
    if std::env::var_os(var).is_none() {
        // SAFETY: the caller's contract: no other thread exists yet.
        unsafe { std::env::set_var(var, value) };
    }
}

/// One GPU: its primary context, a stream, and the kernels loaded in it (the
/// modules of [`kernels::SOURCES`] and their functions by name, loaded once
/// per GPU from the PTX [`crate::Devices`] compiled for its architecture).
#[derive(Debug)]
pub struct Gpu {
    pub ordinal: usize,
    pub dev: sys::CUdevice,
    pub ctx: sys::CUcontext,
    pub name: String,
    /// `0000:00:06.0`
    pub pci_bus_id: String,
    pub cc: (i32, i32),
    pub sms: u32,
    /// The stream every operation of this GPU runs on unless told otherwise
    /// ([`Gpu::stream`]).
    stream: sys::CUstream,
    /// (kernel file, module loaded in this GPU's context).
    modules: Vec<(&'static str, sys::CUmodule)>,
    funcs: HashMap<&'static str, sys::CUfunction>,
}

// SAFETY: driver handles may be used from any thread once the context is
// bound there (every method binds it first).
unsafe impl Send for Gpu {}
unsafe impl Sync for Gpu {}

impl Gpu {
    /// Retains the primary context of GPU `ordinal` and creates its stream.
    pub fn open(ordinal: usize) -> Result<Gpu, HwError> {
        let mut dev = 0;
        ck(
            unsafe { sys::cuDeviceGet(&mut dev, ordinal as i32) },
            "cuDeviceGet",
        )?;
        let mut name = [0i8; 256];
        ck(
            unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), 256, dev) },
            "cuDeviceGetName",
        )?;
        let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut bus = [0i8; 64];
        ck(
            unsafe { sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), 64, dev) },
            "cuDeviceGetPCIBusId",
        )?;
        let pci_bus_id = unsafe { std::ffi::CStr::from_ptr(bus.as_ptr()) }
            .to_string_lossy()
            .to_lowercase();
        let attr = |a: sys::CUdevice_attribute| -> Result<i32, HwError> {
            let mut v = 0;
            ck(
                unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) },
                "cuDeviceGetAttribute",
            )?;
            Ok(v)
        };
        use sys::CUdevice_attribute::*;
        let cc = (
            attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let mut ctx = std::ptr::null_mut();
        ck(
            unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) },
            "cuDevicePrimaryCtxRetain",
        )?;
        ck(unsafe { sys::cuCtxSetCurrent(ctx) }, "cuCtxSetCurrent")?;
        let mut stream = std::ptr::null_mut();
        ck(
            unsafe {
                sys::cuStreamCreate(
                    &mut stream,
                    sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
                )
            },
            "cuStreamCreate",
        )?;
        Ok(Gpu {
            ordinal,
            dev,
            ctx,
            name,
            pci_bus_id,
            cc,
            sms,
            stream,
            modules: vec![],
            funcs: HashMap::new(),
        })
    }

    /// The architecture the kernels are compiled for (`sm_90`, ...).
    pub fn arch(&self) -> Result<kernels::Arch, HwError> {
        kernels::Arch::from_cc(self.cc.0, self.cc.1)
    }

    /// Integer device attribute.
    pub fn attribute(&self, a: sys::CUdevice_attribute) -> Result<i32, HwError> {
        let mut v = 0;
        ck(
            unsafe { sys::cuDeviceGetAttribute(&mut v, a, self.dev) },
            "cuDeviceGetAttribute",
        )?;
        Ok(v)
    }

    /// Makes this GPU's context current on the calling thread.
    pub fn bind(&self) -> Result<(), HwError> {
        ck(unsafe { sys::cuCtxSetCurrent(self.ctx) }, "cuCtxSetCurrent")
    }

    /// Loads the module of every kernel file from `ptx` (compiled for this
    /// GPU's architecture) and looks up its entry points. A file already
    /// loaded is not loaded again.
    pub fn load_kernels(&mut self, ptx: &kernels::Ptx) -> Result<(), HwError> {
        let arch = self.arch()?;
        if ptx.arch != arch {
            return Err(HwError::Unsupported(format!(
                "GPU {} is {arch}, the kernels were compiled for {}",
                self.ordinal, ptx.arch
            )));
        }
        self.bind()?;
        for (file, image) in &ptx.files {
            if self.modules.iter().any(|(f, _)| f == file) {
                continue;
            }
            let mut m = std::ptr::null_mut();
            // SAFETY: `image` is NUL-terminated PTX (kernels::compile), read
            // by the driver during the call only.
            ck(
                unsafe { sys::cuModuleLoadData(&mut m, image.as_ptr() as *const c_void) },
                "cuModuleLoadData",
            )?;
            self.modules.push((file, m));
            for name in kernels::entry_points(file) {
                let cname = std::ffi::CString::new(*name)
                    .map_err(|_| HwError::Unsupported("bad kernel name".into()))?;
                let mut f = std::ptr::null_mut();
                ck(
                    unsafe { sys::cuModuleGetFunction(&mut f, m, cname.as_ptr()) },
                    "cuModuleGetFunction",
                )?;
                self.funcs.insert(name, f);
            }
        }
        Ok(())
    }

    /// The stream every operation of this GPU runs on unless told otherwise.
    pub fn stream(&self) -> StreamRef<'_> {
        StreamRef::new(self.stream)
    }

    /// A kernel by name.
    pub fn func(&self, name: &str) -> Result<Func<'_>, HwError> {
        self.funcs
            .get_key_value(name)
            .map(|(&name, &raw)| Func {
                raw,
                name,
                gpu: self.ordinal,
                _gpu: PhantomData,
            })
            .ok_or_else(|| HwError::Unsupported(format!("kernel `{name}` is not loaded")))
    }

    /// Most threads per block kernel `f` can be launched with (registers
    /// and `__launch_bounds__` decide).
    pub fn max_threads(&self, f: Func<'_>) -> Result<u32, HwError> {
        let mut v = 0;
        // SAFETY: `f` is a live function handle (it borrows the GPU whose
        // module holds it); the driver writes one int.
        ck(
            unsafe {
                sys::cuFuncGetAttribute(
                    &mut v,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                    f.raw,
                )
            },
            "cuFuncGetAttribute",
        )?;
        Ok(v as u32)
    }

    /// Most blocks of kernel `f`, launched with `threads` threads per block
    /// (no dynamic shared memory), that one SM keeps resident at once
    /// (cuOccupancyMaxActiveBlocksPerMultiprocessor: registers, shared
    /// memory and the block limit decide).
    pub fn max_active_blocks(&self, f: Func<'_>, threads: u32) -> Result<u32, HwError> {
        self.bind()?;
        let mut v = 0;
        // SAFETY: `f` is a live function handle of this GPU's module; the
        // driver writes one int.
        ck(
            unsafe {
                sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut v, f.raw, threads as i32, 0)
            },
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        )?;
        Ok(v.max(0) as u32)
    }

    /// Launches `f` on `stream` (`grid` blocks of `block` threads) with
    /// `args`, a tuple of references to its parameters in order
    /// (`(&ptr, &n)`, `(&ar_args,)`). The driver copies the parameter values
    /// during the call; the references keep them alive until then.
    ///
    /// # Safety
    /// - `args` has exactly the kernel's parameters, in order, each of the
    ///   type (size and layout) the kernel declares: a `u64` for a pointer,
    ///   `u32` for a `u32`, [`crate::abi::ArArgs`] for an `ArArgs`;
    /// - every device address among them (direct or inside a struct) points
    ///   at memory that this GPU can address (its own, a peer's with peer
    ///   access enabled, or mapped host memory), is large enough for every
    ///   access the kernel makes with the other arguments, and stays
    ///   allocated until the kernel has finished;
    /// - no other work touches that memory while the kernel runs in a way
    ///   the kernel does not expect (the flag protocols of `kernels/`);
    /// - `stream` belongs to this GPU's context.
    ///
    /// The handle `f` is checked to belong to this GPU.
    pub unsafe fn launch<A: KernelArgs>(
        &self,
        f: Func<'_>,
        grid: u32,
        block: u32,
        stream: StreamRef<'_>,
        args: A,
    ) -> Result<(), HwError> {
        if f.gpu != self.ordinal {
            return Err(HwError::Unsupported(format!(
                "kernel `{}` of GPU {} launched on GPU {}",
                f.name, f.gpu, self.ordinal
            )));
        }
        args.with_params(|params| {
            // SAFETY: `params` holds one pointer per parameter, each at a
            // live value of the type the caller vouches for; the driver
            // reads them during this call only. The rest is the caller's
            // contract.
            ck(
                unsafe {
                    sys::cuLaunchKernel(
                        f.raw,
                        grid,
                        1,
                        1,
                        block,
                        1,
                        1,
                        0,
                        stream.raw,
                        params.as_mut_ptr(),
                        std::ptr::null_mut(),
                    )
                },
                "cuLaunchKernel",
            )
        })
    }

    /// A further stream on this GPU.
    pub fn new_stream(&self) -> Result<Stream, HwError> {
        self.bind()?;
        let mut s = std::ptr::null_mut();
        ck(
            unsafe {
                sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
            },
            "cuStreamCreate",
        )?;
        Ok(Stream { ctx: self.ctx, s })
    }

    /// Waits for this GPU's stream with a deadline.
    pub fn sync(&self, limit: Duration) -> Result<bool, HwError> {
        sync_stream(self.stream(), limit)
    }
}

/// A stream, borrowed from the [`Gpu`] or [`Stream`] that owns it (so it
/// cannot outlive it).
#[derive(Clone, Copy, Debug)]
pub struct StreamRef<'a> {
    raw: sys::CUstream,
    _owner: PhantomData<&'a ()>,
}

// SAFETY: a stream handle may be used from any thread (the driver
// serialises work on it); the borrow keeps it alive.
unsafe impl Send for StreamRef<'_> {}
unsafe impl Sync for StreamRef<'_> {}

impl StreamRef<'_> {
    fn new(raw: sys::CUstream) -> Self {
        StreamRef {
            raw,
            _owner: PhantomData,
        }
    }

    /// The driver handle, for a library that takes one (NCCL).
    pub fn raw(self) -> sys::CUstream {
        self.raw
    }
}

/// A kernel of one GPU's loaded modules, borrowed from that [`Gpu`]
/// ([`Gpu::func`]).
#[derive(Clone, Copy, Debug)]
pub struct Func<'a> {
    raw: sys::CUfunction,
    name: &'static str,
    /// Ordinal of the GPU whose module holds it.
    gpu: usize,
    _gpu: PhantomData<&'a Gpu>,
}

// SAFETY: a function handle is immutable once its module is loaded and may
// be used from any thread; the borrow keeps the module loaded.
unsafe impl Send for Func<'_> {}
unsafe impl Sync for Func<'_> {}

impl Func<'_> {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// A value a kernel takes as one parameter, passed to the driver as its
/// bytes.
///
/// # Safety
/// The type is plain data (no padding the kernel would read, no drop, no
/// Rust-side invariants) with the size and layout of the C type the kernels
/// declare for it.
pub unsafe trait KernelArg: Copy {}

// SAFETY: the C `u32`/`u64` (checked in the prelude of crate::abi) and
// pointers passed as 64-bit device addresses.
unsafe impl KernelArg for u32 {}
unsafe impl KernelArg for u64 {}
// SAFETY: its C declaration is generated from it, with its size checked on
// both sides and no padding (crate::abi).
unsafe impl KernelArg for crate::abi::ArArgs {}

/// The parameters of one launch: a tuple of references to [`KernelArg`]
/// values, in the kernel's order.
pub trait KernelArgs {
    /// Calls `f` with a pointer to each parameter value (valid during `f`).
    fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;
}

macro_rules! kernel_args {
    ($( ($($t:ident $v:ident),+) )*) => {$(
        impl<$($t: KernelArg),+> KernelArgs for ($(&$t,)+) {
            fn with_params<R>(&self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
                let ($($v,)+) = *self;
                // The driver takes `void**` but only reads the values.
                let mut params = [$($v as *const $t as *mut c_void),+];
                f(&mut params)
            }
        }
    )*};
}

kernel_args! {
    (A a)
    (A a, B b)
    (A a, B b, C c)
    (A a, B b, C c, D d)
    (A a, B b, C c, D d, E e)
    (A a, B b, C c, D d, E e, F f)
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if is_poisoned() {
            return;
        }
        unsafe {
            let _ = sys::cuCtxSetCurrent(self.ctx);
            let _ = sys::cuStreamDestroy_v2(self.stream);
            for (_, m) in self.modules.drain(..) {
                let _ = sys::cuModuleUnload(m);
            }
            let _ = sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

/// Polls `stream` until it is idle or `limit` passes (false: still busy).
pub fn sync_stream(stream: StreamRef<'_>, limit: Duration) -> Result<bool, HwError> {
    let deadline = Instant::now() + limit;
    loop {
        match unsafe { sys::cuStreamQuery(stream.raw) } {
            sys::CUresult::CUDA_SUCCESS => return Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => {}
            other => {
                return Err(HwError::Driver {
                    call: "cuStreamQuery",
                    code: err_name(other),
                });
            }
        }
        if Instant::now() > deadline {
            return Ok(false);
        }
        std::thread::yield_now();
    }
}

/// An extra stream.
#[derive(Debug)]
pub struct Stream {
    ctx: sys::CUcontext,
    s: sys::CUstream,
}
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    /// The stream, borrowed.
    pub fn handle(&self) -> StreamRef<'_> {
        StreamRef::new(self.s)
    }
}
impl Drop for Stream {
    fn drop(&mut self) {
        if !is_poisoned() {
            unsafe {
                let _ = sys::cuCtxSetCurrent(self.ctx);
                let _ = sys::cuStreamDestroy_v2(self.s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launch parameters are pointers at the borrowed values, in order.
    #[test]
    fn kernel_args_point_at_their_values_in_order() {
        let (ptr, n, pattern) = (0xdead_beef_0000_u64, 42u64, 7u32);
        (&ptr, &n, &pattern).with_params(|p| {
            assert_eq!(p.len(), 3);
            assert_eq!(p[0] as *const u64, &ptr as *const u64);
            assert_eq!(p[1] as *const u64, &n as *const u64);
            assert_eq!(p[2] as *const u32, &pattern as *const u32);
        });
        let a = crate::abi::ArArgs {
            nranks: 2,
            ..Default::default()
        };
        (&a,).with_params(|p| {
            assert_eq!(p.len(), 1);
            // SAFETY: p[0] points at `a`, alive for this closure.
            let back = unsafe { *(p[0] as *const crate::abi::ArArgs) };
            assert_eq!(back, a);
        });
        let six = (&1u64, &2u64, &3u32, &4u32, &5u64, &6u64);
        six.with_params(|p| assert_eq!(p.len(), 6));
    }
}
