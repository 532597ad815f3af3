//! Progress bars on stderr, ticking on their own (a long simulation or a
//! fit does not freeze them), in units people read: runs and sizes done,
//! events simulated, time left. indicatif hides them when stderr is not a
//! terminal.

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Mutex;
use std::time::Duration;

/// How often a bar redraws on its own.
const TICK: Duration = Duration::from_millis(200);

fn ticking(len: u64, template: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.enable_steady_tick(TICK);
    pb
}

/// `1.23 M`, `456 k`, `789`.
fn count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=9_999_999 => format!("{:.0} k", n as f64 / 1e3),
        _ => format!("{:.2} M", n as f64 / 1e6),
    }
}

struct Tally {
    runs: usize,
    events: u64,
    /// Per size: runs left.
    left: Vec<(Option<contend_topo::Bytes>, usize)>,
}

/// A bar over simulation runs: its length is the runs' estimated work (so
/// the ETA weighs a 4 GiB run as such), its message runs, sizes and events.
pub struct RunBar {
    pb: ProgressBar,
    cost: Vec<u64>,
    sizes: Vec<Option<contend_topo::Bytes>>,
    total_runs: usize,
    total_sizes: usize,
    tally: Mutex<Tally>,
}

impl RunBar {
    /// A bar over `specs` (those `done` already count), `cost` a run's
    /// work; `sizes`: how many sizes the runs cover (0: no size count shown).
    pub fn new<T>(
        specs: &[contend_sim::RunSpec],
        done: &[Option<T>],
        cost: impl Fn(usize) -> u64,
        sizes: usize,
    ) -> RunBar {
        let cost: Vec<u64> = (0..specs.len()).map(cost).collect();
        let pb = ticking(
            cost.iter().sum(),
            "{spinner} simulating [{bar:30}] {msg}, {elapsed} elapsed, ETA {eta}",
        );
        let mut left: Vec<(Option<contend_topo::Bytes>, usize)> = vec![];
        for (s, d) in specs.iter().zip(done) {
            if d.is_some() {
                continue;
            }
            match left.iter_mut().find(|l| l.0 == s.size) {
                Some(l) => l.1 += 1,
                None => left.push((s.size, 1)),
            }
        }
        let runs = done.iter().filter(|d| d.is_some()).count();
        pb.set_position(
            done.iter()
                .zip(&cost)
                .filter(|(d, _)| d.is_some())
                .map(|(_, c)| c)
                .sum(),
        );
        // the ETA counts from this run's own rate, not the resumed part
        pb.reset_eta();
        let bar = RunBar {
            pb,
            cost,
            sizes: specs.iter().map(|s| s.size).collect(),
            total_runs: specs.len(),
            total_sizes: sizes,
            tally: Mutex::new(Tally {
                runs,
                events: 0,
                left,
            }),
        };
        bar.show(&bar.tally.lock().unwrap_or_else(|e| e.into_inner()));
        bar
    }

    fn show(&self, t: &Tally) {
        let sizes = if self.total_sizes > 0 {
            format!(
                ", sizes {}/{}",
                self.total_sizes - t.left.iter().filter(|l| l.1 > 0).count(),
                self.total_sizes
            )
        } else {
            String::new()
        };
        self.pb.set_message(format!(
            "runs {}/{}{sizes}, {} events",
            t.runs,
            self.total_runs,
            count(t.events)
        ));
    }

    /// Run `i` finished after `events` events.
    pub fn done(&self, i: usize, events: u64) {
        let mut t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        t.runs += 1;
        t.events += events;
        if let Some(l) = t.left.iter_mut().find(|l| l.0 == self.sizes[i]) {
            l.1 = l.1.saturating_sub(1);
        }
        self.pb.inc(self.cost[i]);
        self.show(&t);
    }

    pub fn finish(&self) {
        self.pb.finish_and_clear();
    }
}

/// A bar driven by a library's (stage, done, total) callback, ticking on
/// its own between calls (a fit's stage can run for minutes).
pub fn stage_bar() -> (ProgressBar, impl Fn(&str, usize, usize) + Sync) {
    let pb = ticking(
        0,
        "{spinner} {msg:10} [{bar:30}] {pos}/{len}, {elapsed} elapsed, ETA {eta}",
    );
    let stage = Mutex::new(String::new());
    let pb2 = pb.clone();
    let f = move |s: &str, done: usize, total: usize| {
        if let Ok(mut st) = stage.lock()
            && *st != s
        {
            *st = s.to_string();
            pb2.set_message(s.to_string());
            pb2.set_length(total as u64);
            pb2.set_position(0);
            pb2.reset_eta();
        }
        pb2.set_position(done as u64);
    };
    (pb, f)
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_read_as_people_write_them() {
        assert_eq!(super::count(999), "999");
        assert_eq!(super::count(12_345), "12 k");
        assert_eq!(super::count(12_345_678), "12.35 M");
    }
}
