//! Device memory of one GPU (cuMemAlloc) and pinned host memory mapped
//! into every GPU's address space.

#![allow(unsafe_code)]

use super::{Gpu, StreamRef, ck, is_poisoned};
use crate::error::HwError;
use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

/// Device memory of one GPU (plain cuMemAlloc: reachable by peers once peer
/// access is enabled, unlike memory-pool allocations).
#[derive(Debug)]
pub struct DevMem {
    ctx: sys::CUcontext,
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
}
unsafe impl Send for DevMem {}
unsafe impl Sync for DevMem {}

impl DevMem {
    pub fn alloc(gpu: &Gpu, bytes: usize) -> Result<DevMem, HwError> {
        gpu.bind()?;
        let mut ptr = 0;
        ck(
            unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(16)) },
            "cuMemAlloc",
        )?;
        let m = DevMem {
            ctx: gpu.ctx,
            ptr,
            bytes,
        };
        // On the context's default (null) stream, then waited for.
        m.memset(0, std::ptr::null_mut())?;
        ck(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")?;
        Ok(m)
    }
    /// Sets every byte (asynchronously on `stream`).
    pub fn fill(&self, byte: u8, stream: StreamRef<'_>) -> Result<(), HwError> {
        self.memset(byte, stream.raw)
    }
    fn memset(&self, byte: u8, stream: sys::CUstream) -> Result<(), HwError> {
        // SAFETY: the whole allocation (at least 16 bytes, see alloc) on a
        // live stream of its context, or the null stream.
        ck(
            unsafe { sys::cuMemsetD8Async(self.ptr, byte, self.bytes.max(16), stream) },
            "cuMemsetD8Async",
        )
    }
    /// Copies `data` to the start of this buffer (synchronous).
    pub fn upload(&self, data: &[u8]) -> Result<(), HwError> {
        assert!(data.len() <= self.bytes, "upload larger than the buffer");
        ck(unsafe { sys::cuCtxSetCurrent(self.ctx) }, "cuCtxSetCurrent")?;
        ck(
            unsafe { sys::cuMemcpyHtoD_v2(self.ptr, data.as_ptr() as *const c_void, data.len()) },
            "cuMemcpyHtoD",
        )?;
        // From pageable memory the copy may still be in flight: wait for it.
        ck(unsafe { sys::cuCtxSynchronize() }, "cuCtxSynchronize")
    }
    /// Copies the first `len` bytes back (synchronous).
    pub fn download(&self, len: usize) -> Result<Vec<u8>, HwError> {
        let mut v = vec![0u8; len.min(self.bytes)];
        ck(unsafe { sys::cuCtxSetCurrent(self.ctx) }, "cuCtxSetCurrent")?;
        ck(
            unsafe { sys::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, self.ptr, v.len()) },
            "cuMemcpyDtoH",
        )?;
        Ok(v)
    }
}

impl Drop for DevMem {
    fn drop(&mut self) {
        if !is_poisoned() {
            unsafe {
                let _ = sys::cuCtxSetCurrent(self.ctx);
                let _ = sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}

/// Pinned host memory mapped into every GPU (DEVICEMAP | PORTABLE).
#[derive(Debug)]
pub struct HostMem {
    pub host: *mut u8,
    pub bytes: usize,
    /// The address of this memory as GPU i sees it.
    pub dev: Vec<sys::CUdeviceptr>,
}
unsafe impl Send for HostMem {}
unsafe impl Sync for HostMem {}

impl HostMem {
    pub fn alloc(gpus: &[Gpu], bytes: usize) -> Result<HostMem, HwError> {
        let first = gpus
            .first()
            .ok_or_else(|| HwError::Unsupported("no GPU".into()))?;
        first.bind()?;
        let mut p: *mut c_void = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        ck(
            unsafe { sys::cuMemHostAlloc(&mut p, bytes.max(16), flags) },
            "cuMemHostAlloc",
        )?;
        // SAFETY: freshly allocated, `bytes` long.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, bytes.max(16)) };
        let mut dev = Vec::new();
        for g in gpus {
            g.bind()?;
            let mut d = 0;
            ck(
                unsafe { sys::cuMemHostGetDevicePointer_v2(&mut d, p, 0) },
                "cuMemHostGetDevicePointer",
            )?;
            dev.push(d);
        }
        Ok(HostMem {
            host: p as *mut u8,
            bytes,
            dev,
        })
    }

    /// Volatile read of the u32 at `index` (CPU side).
    pub fn read_u32(&self, index: usize) -> u32 {
        assert!(4 * index + 4 <= self.bytes.max(16));
        // SAFETY: in bounds, aligned (the allocation is page aligned).
        unsafe { std::ptr::read_volatile((self.host as *const u32).add(index)) }
    }

    /// Volatile write of the u32 at `index` (CPU side).
    pub fn write_u32(&self, index: usize, v: u32) {
        assert!(4 * index + 4 <= self.bytes.max(16));
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile((self.host as *mut u32).add(index), v) };
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// Sets every byte from the CPU.
    pub fn fill(&self, byte: u8) {
        // SAFETY: the allocation is `bytes` long.
        unsafe { std::ptr::write_bytes(self.host, byte, self.bytes.max(16)) };
    }
}

impl Drop for HostMem {
    fn drop(&mut self) {
        if !is_poisoned() {
            unsafe {
                let _ = sys::cuMemFreeHost(self.host as *mut c_void);
            }
        }
    }
}
