//! Timing events: recorded on a stream, waited for with a deadline, and
//! the time between two.

#![allow(unsafe_code)]

use super::{Gpu, StreamRef, ck, err_name, is_poisoned};
use crate::error::HwError;
use cudarc::driver::sys;
use std::time::{Duration, Instant};

/// A timing event (CU_EVENT_DEFAULT: timing enabled).
#[derive(Debug)]
pub struct Event {
    ctx: sys::CUcontext,
    pub e: sys::CUevent,
}
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    pub fn new(gpu: &Gpu) -> Result<Event, HwError> {
        gpu.bind()?;
        let mut e = std::ptr::null_mut();
        ck(
            unsafe { sys::cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DEFAULT as u32) },
            "cuEventCreate",
        )?;
        Ok(Event { ctx: gpu.ctx, e })
    }
    pub fn many(gpu: &Gpu, n: usize) -> Result<Vec<Event>, HwError> {
        (0..n).map(|_| Event::new(gpu)).collect()
    }
    pub fn record(&self, stream: StreamRef<'_>) -> Result<(), HwError> {
        ck(
            unsafe { sys::cuEventRecord(self.e, stream.raw) },
            "cuEventRecord",
        )
    }
    /// Whether the work before the event is done.
    pub fn done(&self) -> Result<bool, HwError> {
        match unsafe { sys::cuEventQuery(self.e) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(HwError::Driver {
                call: "cuEventQuery",
                code: err_name(other),
            }),
        }
    }
    /// Polls until done or `limit` passes (false: not done).
    pub fn wait(&self, limit: Duration) -> Result<bool, HwError> {
        let deadline = Instant::now() + limit;
        loop {
            if self.done()? {
                return Ok(true);
            }
            if Instant::now() > deadline {
                return Ok(false);
            }
            std::thread::yield_now();
        }
    }
    /// Nanoseconds from `self` to `end`.
    pub fn ns_until(&self, end: &Event) -> Result<f64, HwError> {
        let mut ms = 0f32;
        ck(
            unsafe { sys::cuEventElapsedTime_v2(&mut ms, self.e, end.e) },
            "cuEventElapsedTime",
        )?;
        Ok(f64::from(ms) * 1e6)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if !is_poisoned() {
            unsafe {
                let _ = sys::cuCtxSetCurrent(self.ctx);
                let _ = sys::cuEventDestroy_v2(self.e);
            }
        }
    }
}
