//! SIGINT and SIGTERM during a long run: what is done is flushed and
//! counted on stderr, and the process exits non-zero (130 for SIGINT, 143
//! for SIGTERM, as a shell reports a signal's death).
//!
//! A command that streams results registers what to do on a signal
//! ([`on_signal`]); the handler runs on its own thread (signal-hook's
//! iterator), so a simulation that takes minutes does not delay it.

use std::sync::{Mutex, OnceLock};

type Action = Box<dyn Fn() + Send + Sync>;

fn action() -> &'static Mutex<Option<Action>> {
    static A: OnceLock<Mutex<Option<Action>>> = OnceLock::new();
    A.get_or_init(|| Mutex::new(None))
}

/// The exit status after `signal`: 128 plus its number.
pub fn exit_status(signal: i32) -> i32 {
    128 + signal
}

/// From now on, SIGINT and SIGTERM run `f` and then exit with
/// [`exit_status`]; a second call replaces `f`. The handler thread starts
/// on the first call.
pub fn on_signal(f: impl Fn() + Send + Sync + 'static) {
    static STARTED: OnceLock<()> = OnceLock::new();
    *action().lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(f));
    STARTED.get_or_init(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
            Ok(mut signals) => {
                std::thread::spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        if let Some(f) = action().lock().unwrap_or_else(|e| e.into_inner()).as_ref()
                        {
                            f();
                        }
                        std::process::exit(exit_status(sig));
                    }
                });
            }
            // without a handler the signal's default ends the process, as before
            Err(e) => eprintln!("warning: cannot catch SIGINT/SIGTERM ({e}): results stream, but nothing is flushed on Ctrl-C"),
        }
    });
}
