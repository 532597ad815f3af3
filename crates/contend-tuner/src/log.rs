//! Lines into NCCL's own log, through the logger function NCCL hands `init`
//! (`ncclDebugLog`): they appear among NCCL's INFO and WARN lines, under
//! `NCCL_DEBUG` and `NCCL_DEBUG_SUBSYS` (INIT and TUNING), in
//! `NCCL_DEBUG_FILE` when set. Every line starts `contend-tuner:`.

use crate::abi::{LOG_FLAGS, LOG_INFO, LOG_WARN, Logger};
use std::ffi::{CStr, CString, c_int};

/// NCCL's logger, or nothing (then lines are dropped).
#[derive(Clone, Copy, Debug)]
pub struct Log {
    f: Option<Logger>,
}

/// What every line starts with.
pub const PREFIX: &str = "contend-tuner: ";

impl Log {
    pub fn new(f: Option<Logger>) -> Log {
        Log { f }
    }
    pub fn info(&self, msg: &str) {
        self.emit(LOG_INFO, msg);
    }
    pub fn warn(&self, msg: &str) {
        self.emit(LOG_WARN, msg);
    }
    fn emit(&self, level: c_int, msg: &str) {
        let Some(f) = self.f else { return };
        // NUL cannot cross as C text: shown as a space
        let text = CString::new(format!("{PREFIX}{msg}").replace('\0', " ")).unwrap_or_default();
        let file: &CStr = c"contend-tuner";
        // SAFETY: `f` is the logger NCCL passed to init, a printf-like
        // variadic function; the format "%s" takes exactly the one
        // argument given, a NUL-terminated string that outlives the call,
        // and `file` is a NUL-terminated literal.
        unsafe {
            f(
                level,
                LOG_FLAGS,
                file.as_ptr(),
                0,
                c"%s".as_ptr(),
                text.as_ptr(),
            )
        };
    }
}
