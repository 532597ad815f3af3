//! Copies by the copy engines (host to device, device to host, peer to
//! peer) and peer access between GPUs.

#![allow(unsafe_code)]

use super::DevMem;
use super::{Gpu, StreamRef, ck, err_name};
use crate::error::HwError;
use cudarc::driver::sys;
use std::ffi::c_void;

/// Copies `bytes` from host memory at `src` to device address `dst`,
/// asynchronously on `stream` (a copy engine).
///
/// # Safety
/// - `src` points at `bytes` readable bytes of pinned host memory that stay
///   allocated and unchanged until the copy is done (the stream has passed
///   it), not only until this call returns;
/// - `dst` is a device address of `stream`'s context with `bytes` writable
///   bytes that stay allocated until then, and nothing else uses them
///   meanwhile.
pub unsafe fn copy_htod_async(
    dst: sys::CUdeviceptr,
    src: *const u8,
    bytes: usize,
    stream: StreamRef<'_>,
) -> Result<(), HwError> {
    ck(
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, bytes, stream.raw) },
        "cuMemcpyHtoDAsync",
    )
}

/// Copies `bytes` from device address `src` to host memory at `dst`,
/// asynchronously on `stream` (a copy engine).
///
/// # Safety
/// - `dst` points at `bytes` writable bytes of pinned host memory that stay
///   allocated, and that nothing reads or writes, until the copy is done
///   (the stream has passed it), not only until this call returns;
/// - `src` is a device address of `stream`'s context with `bytes` readable
///   bytes that stay allocated until then.
pub unsafe fn copy_dtoh_async(
    dst: *mut u8,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: StreamRef<'_>,
) -> Result<(), HwError> {
    ck(
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, bytes, stream.raw) },
        "cuMemcpyDtoHAsync",
    )
}

/// cuMemcpyPeerAsync (the cudaMemcpyPeerAsync path: copy engine over
/// NVLink/PCIe, not a staged copy) of the first `bytes` of `src` into `dst`.
/// Both buffers must hold `bytes`; the borrows keep them allocated while
/// the call enqueues, and the caller waits for `stream` before freeing them
/// (as with every asynchronous operation here).
pub fn copy_peer_async(
    dst: &DevMem,
    dst_gpu: &Gpu,
    src: &DevMem,
    src_gpu: &Gpu,
    bytes: usize,
    stream: StreamRef<'_>,
) -> Result<(), HwError> {
    if bytes > dst.bytes || bytes > src.bytes {
        return Err(HwError::Unsupported(format!(
            "peer copy of {bytes} B between buffers of {} B and {} B",
            src.bytes, dst.bytes
        )));
    }
    // SAFETY: both ranges lie inside live allocations (checked above) of
    // the contexts named.
    ck(
        unsafe {
            sys::cuMemcpyPeerAsync(
                dst.ptr,
                dst_gpu.ctx,
                src.ptr,
                src_gpu.ctx,
                bytes,
                stream.raw,
            )
        },
        "cuMemcpyPeerAsync",
    )
}

/// Copies `bytes` from device address `src` (of `src_gpu`'s context) to
/// device address `dst` (of `dst_gpu`'s context) with cuMemcpyPeerAsync on
/// `stream`: the copy engine, over NVLink or PCIe; the two GPUs may be the
/// same one.
///
/// # Safety
/// Both ranges are live device memory of the contexts named, `bytes` long,
/// and stay allocated until `stream` has passed the copy; nothing else
/// writes the destination meanwhile, except as the caller's protocol allows.
pub unsafe fn copy_peer_raw_async(
    dst: sys::CUdeviceptr,
    dst_gpu: &Gpu,
    src: sys::CUdeviceptr,
    src_gpu: &Gpu,
    bytes: usize,
    stream: StreamRef<'_>,
) -> Result<(), HwError> {
    ck(
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyPeerAsync(dst, dst_gpu.ctx, src, src_gpu.ctx, bytes, stream.raw) },
        "cuMemcpyPeerAsync",
    )
}

/// Copies `bytes` from `src` to `dst` with cuMemcpyAsync on `stream` (the
/// copy engine; unified addressing infers each side's kind, so either may be
/// device memory or mapped pinned host memory).
///
/// # Safety
/// Both ranges are live memory this context can address (its device memory,
/// a peer's with peer access, or mapped pinned host memory), `bytes` long,
/// allocated until `stream` has passed the copy; nothing else writes the
/// destination meanwhile, except as the caller's protocol allows.
pub unsafe fn copy_async(
    dst: sys::CUdeviceptr,
    src: sys::CUdeviceptr,
    bytes: usize,
    stream: StreamRef<'_>,
) -> Result<(), HwError> {
    ck(
        // SAFETY: the caller's contract.
        unsafe { sys::cuMemcpyAsync(dst, src, bytes, stream.raw) },
        "cuMemcpyAsync",
    )
}

/// Peer access between two GPUs as the driver reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct P2p {
    pub access: bool,
    pub native_atomics: bool,
    pub rank: i32,
}

pub fn p2p(a: &Gpu, b: &Gpu) -> Result<P2p, HwError> {
    let mut can = 0;
    ck(
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.dev, b.dev) },
        "cuDeviceCanAccessPeer",
    )?;
    let attr = |x: sys::CUdevice_P2PAttribute| -> i32 {
        let mut v = 0;
        let r = unsafe { sys::cuDeviceGetP2PAttribute(&mut v, x, a.dev, b.dev) };
        if r == sys::CUresult::CUDA_SUCCESS {
            v
        } else {
            0
        }
    };
    use sys::CUdevice_P2PAttribute::*;
    Ok(P2p {
        access: can != 0,
        native_atomics: attr(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED) != 0,
        rank: attr(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK),
    })
}

/// Lets `from`'s kernels address `to`'s memory.
pub fn enable_peer(from: &Gpu, to: &Gpu) -> Result<(), HwError> {
    from.bind()?;
    match unsafe { sys::cuCtxEnablePeerAccess(to.ctx, 0) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
            Ok(())
        }
        other => Err(HwError::Driver {
            call: "cuCtxEnablePeerAccess",
            code: err_name(other),
        }),
    }
}
