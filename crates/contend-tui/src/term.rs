//! The terminal: raw mode and the alternate screen, restored on every way
//! out (normal exit, error, panic), and the event loop that polls keys with
//! a timeout so results from the worker show up without a key press.

use crate::app::App;
use crate::ui;
use crate::worker::WORKER_THREAD_PREFIX;
use crossterm::event::{self, Event};
use std::io;
use std::sync::Once;
use std::time::Duration;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum TuiError {
    #[error("terminal: {0}")]
    Terminal(#[from] io::Error),
}

static HOOK: Once = Once::new();

/// Installs (once) a panic hook that puts the terminal back before the
/// message is printed. Panics on worker threads are left alone: the worker
/// catches them and reports them as a failed job.
pub fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let on_worker = std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with(WORKER_THREAD_PREFIX));
            if on_worker {
                return;
            }
            restore();
            previous(info);
        }));
    });
}

/// Leaves raw mode and the alternate screen; errors are ignored (there is
/// nothing left to report them on).
pub fn restore() {
    let _ = crossterm::terminal::disable_raw_mode();
    let _ = crossterm::execute!(
        io::stdout(),
        crossterm::terminal::LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// Restores the terminal when dropped, so `?` and early returns restore too.
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Runs the app in the terminal until the user quits.
pub fn run(app: &mut App) -> Result<(), TuiError> {
    install_panic_hook();
    crossterm::terminal::enable_raw_mode()?;
    let _guard = Guard;
    crossterm::execute!(io::stdout(), crossterm::terminal::EnterAlternateScreen)?;
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(io::stdout()))?;
    terminal.clear()?;
    while !app.should_quit() {
        app.poll_worker();
        terminal.draw(|f| ui::draw(app, f))?;
        // Short timeout while simulating (spinner, results), longer when idle.
        let wait = if app.is_busy() {
            Duration::from_millis(80)
        } else {
            Duration::from_millis(250)
        };
        if event::poll(wait)? {
            match event::read()? {
                Event::Key(k) => app.handle_key(k),
                Event::Resize(_, _) => terminal.autoresize()?,
                _ => {}
            }
            // Take every key already typed before drawing again.
            while event::poll(Duration::ZERO)? {
                if let Event::Key(k) = event::read()? {
                    app.handle_key(k);
                }
            }
        }
        app.on_tick();
    }
    Ok(())
}
