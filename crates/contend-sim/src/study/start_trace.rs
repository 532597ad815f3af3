//! What the TLP channels start, in the order they start it, for the
//! steady-state study (`examples/steady_state.rs`): with the `start-trace`
//! feature every packet a channel starts is kept (its time, channel, path,
//! hop and credit class) until [`take`] takes them; without it the hook is
//! empty and costs nothing.

use contend_topo::Picos;

/// A packet a channel started: when its first bit goes out, the channel,
/// the packet's path and hop on it, and its credit class (0 posted, 1
/// non-posted, 2 completion).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChannelStart {
    pub at: Picos,
    pub chan: u32,
    pub path: u32,
    pub hop: u16,
    pub class: u8,
}

#[cfg(feature = "start-trace")]
thread_local! {
    static STARTS: std::cell::RefCell<Vec<ChannelStart>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Keeps a start (with the `start-trace` feature; else nothing).
#[inline(always)]
pub(crate) fn record(start: ChannelStart) {
    #[cfg(feature = "start-trace")]
    STARTS.with(|s| s.borrow_mut().push(start));
    #[cfg(not(feature = "start-trace"))]
    let _ = start;
}

/// The starts kept on this thread since the last take, in the order the
/// channels started them (empty without the `start-trace` feature).
pub fn take() -> Vec<ChannelStart> {
    #[cfg(feature = "start-trace")]
    return STARTS.with(|s| std::mem::take(&mut *s.borrow_mut()));
    #[cfg(not(feature = "start-trace"))]
    Vec::new()
}

/// Whether this build keeps the starts (the `start-trace` feature).
pub const ENABLED: bool = cfg!(feature = "start-trace");
