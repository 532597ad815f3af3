//! CUDA graphs captured from one stream, instantiated and uploaded.

#![allow(unsafe_code)]

use super::{Gpu, StreamRef, ck, is_poisoned};
use crate::error::HwError;
use cudarc::driver::sys;

/// A CUDA graph captured from one stream, instantiated and uploaded.
#[derive(Debug)]
pub struct Graph {
    ctx: sys::CUcontext,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
}
unsafe impl Send for Graph {}

impl Graph {
    /// Captures what `body` enqueues on `stream` (thread-local capture mode,
    /// so other GPUs' threads can keep working).
    pub fn capture(
        gpu: &Gpu,
        stream: StreamRef<'_>,
        body: impl FnOnce() -> Result<(), HwError>,
    ) -> Result<Graph, HwError> {
        let stream = stream.raw;
        gpu.bind()?;
        ck(
            unsafe {
                sys::cuStreamBeginCapture_v2(
                    stream,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
            },
            "cuStreamBeginCapture",
        )?;
        let r = body();
        let mut graph = std::ptr::null_mut();
        let end = ck(
            unsafe { sys::cuStreamEndCapture(stream, &mut graph) },
            "cuStreamEndCapture",
        );
        r?;
        end?;
        let mut exec = std::ptr::null_mut();
        ck(
            unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) },
            "cuGraphInstantiate",
        )?;
        ck(unsafe { sys::cuGraphUpload(exec, stream) }, "cuGraphUpload")?;
        Ok(Graph {
            ctx: gpu.ctx,
            graph,
            exec,
        })
    }
    pub fn launch(&self, stream: StreamRef<'_>) -> Result<(), HwError> {
        ck(
            unsafe { sys::cuGraphLaunch(self.exec, stream.raw) },
            "cuGraphLaunch",
        )
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if !is_poisoned() {
            unsafe {
                let _ = sys::cuCtxSetCurrent(self.ctx);
                let _ = sys::cuGraphExecDestroy(self.exec);
                let _ = sys::cuGraphDestroy(self.graph);
            }
        }
    }
}
