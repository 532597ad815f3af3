//! How much of a TLP run is in a steady state an exact fast-forward could
//! skip (issue 11): for each channel, the longest stretch of its packet
//! starts that repeats exactly, their spacing in time and what they carry
//! (path, hop, credit class), with some period; and the same for their
//! order alone. A fast-forward that keeps TLP results to the byte can skip
//! at most the repeats of such a stretch (the starts after its first
//! block), so their share of the starts bounds what it can save (loosely:
//! it would need every channel in a repeating stretch at once).
//!
//! ```text
//! sed -e 's/^layers.*/layers = 4/' -e 's/^fidelity.*/fidelity = ["tlp"]/' \
//!     -e 's/^algorithms.*/algorithms = ["one-shot-pull", "hierarchical"]/' \
//!     -e 's#^topology = "\(.*\)"#topology = "'$PWD'/topologies/\1.toml"#' \
//!     scenarios/eagle3-verify-pro6000-2socket.toml > /tmp/steady.toml
//! cargo run --release -p contend-sim --features start-trace \
//!     --example steady_state -- /tmp/steady.toml [MAX_PERIOD]
//! ```
//!
//! With no scenario it runs the embedded default verify step (61 layers,
//! every algorithm: minutes, and a trace of tens of millions of starts).

use contend_sim::periodicity::{PeriodicRun, longest_periodic_run, repeated};
use contend_sim::start_trace::{self, ChannelStart};
use contend_sim::{ModelParams, runs_of, simulate_one};
use contend_workload::{Fidelity, default_scenario, load_scenario};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

/// Periods tried, in starts on one channel, unless the command line says.
const MAX_PERIOD: usize = 2_000;

/// Periods tried on the whole fabric's starts, in those on one channel.
const FABRIC_PERIODS: usize = 8;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sc = match args.first() {
        Some(f) => load_scenario(Path::new(f), None),
        None => default_scenario(None),
    };
    let sc = match sc {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let max_period = match args.get(1).map(|s| s.parse::<usize>()) {
        None => MAX_PERIOD,
        Some(Ok(p)) if p > 0 => p,
        Some(_) => {
            eprintln!(
                "error: MAX_PERIOD must be a whole number above 0, got `{}`",
                args[1]
            );
            return ExitCode::FAILURE;
        }
    };
    let params = ModelParams::default();
    for spec in runs_of(&sc, &[Fidelity::Tlp]) {
        start_trace::take();
        let run = match simulate_one(&sc, &params, spec) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        let starts = start_trace::take();
        let r = run.record();
        report(
            &r.algorithm.to_string(),
            r.events.unwrap_or(0),
            &starts,
            max_period,
        );
    }
    ExitCode::SUCCESS
}

/// One channel's starts that repeat a whole block before them (timed,
/// order alone), and its longest exactly repeating stretches.
struct Chan {
    starts: usize,
    /// Starts of the path, hop and class the channel started last (what
    /// batching a stream's packets into trains could take at most).
    same_stream: usize,
    repeated: (usize, usize),
    timed: Option<PeriodicRun>,
    order: Option<PeriodicRun>,
}

fn report(algorithm: &str, events: u64, starts: &[ChannelStart], max_period: usize) {
    let mut by_chan: BTreeMap<u32, Vec<ChannelStart>> = BTreeMap::new();
    for s in starts {
        by_chan.entry(s.chan).or_default().push(*s);
    }
    let mut chans: Vec<(u32, Chan)> = by_chan
        .into_iter()
        .map(|(c, mut v)| {
            // (ties in time in one order whatever the event order)
            v.sort_unstable();
            let timed: Vec<(u64, u32, u16, u8)> = v
                .windows(2)
                .map(|w| (w[1].at.0 - w[0].at.0, w[1].path, w[1].hop, w[1].class))
                .collect();
            let order: Vec<(u32, u16, u8)> = v.iter().map(|s| (s.path, s.hop, s.class)).collect();
            let chan = Chan {
                starts: v.len(),
                same_stream: order.windows(2).filter(|w| w[0] == w[1]).count(),
                repeated: (repeated(&timed, max_period), repeated(&order, max_period)),
                timed: longest_periodic_run(&timed, max_period),
                order: longest_periodic_run(&order, max_period),
            };
            (c, chan)
        })
        .collect();
    chans.sort_by_key(|(c, k)| (std::cmp::Reverse(k.starts), *c));
    let (timed, order): (usize, usize) = chans
        .iter()
        .map(|(_, k)| k.repeated)
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let same_stream: usize = chans.iter().map(|(_, k)| k.same_stream).sum();
    let pct = |x: usize, of: usize| 100.0 * x as f64 / of.max(1) as f64;
    // the whole fabric: every channel's starts in one sequence, in time
    let mut all = starts.to_vec();
    all.sort_unstable();
    let fabric: Vec<(u64, u32, u32, u16, u8)> = all
        .windows(2)
        .map(|w| {
            (
                w[1].at.0 - w[0].at.0,
                w[1].chan,
                w[1].path,
                w[1].hop,
                w[1].class,
            )
        })
        .collect();
    let fabric_period = max_period * FABRIC_PERIODS;
    let fabric_repeated = repeated(&fabric, fabric_period);
    let fabric_longest = longest_periodic_run(&fabric, fabric_period);
    println!(
        "{algorithm}: {events} events, {} starts on {} channels; starts repeating a whole block before them on their channel (periods to {max_period}): {:.1} % timed, {:.1} % by order alone",
        starts.len(),
        chans.len(),
        pct(timed, starts.len()),
        pct(order, starts.len()),
    );
    println!(
        "  back to back: {:.1} % of the starts follow one of the same path, hop and class on their channel",
        pct(same_stream, starts.len()),
    );
    println!(
        "  the whole fabric (periods to {fabric_period}): {:.1} % of the starts repeat a whole block before them; the longest stretch repeats {} starts (period {})",
        pct(fabric_repeated, starts.len()),
        fabric_longest.map_or(0, |r| r.len),
        fabric_longest.map_or(0, |r| r.period),
    );
    println!(
        "  {:>7} {:>9} {:>15} {:>7} {:>7} {:>15} {:>7} {:>7}",
        "channel", "starts", "longest timed", "period", "share", "longest order", "period", "share"
    );
    for (c, k) in chans.iter().take(8) {
        // (a fast-forward must see a block before it can repeat it: what it
        // could skip is the repeats, `len`, not the first block)
        let cell = |r: Option<PeriodicRun>| match r {
            Some(r) => (r.len, r.period, pct(r.len, k.starts)),
            None => (0, 0, 0.0),
        };
        let (ts, tp, tsh) = cell(k.timed);
        let (os, op, osh) = cell(k.order);
        println!(
            "  {c:>7} {:>9} {ts:>15} {tp:>7} {tsh:>6.1}% {os:>15} {op:>7} {osh:>6.1}%",
            k.starts
        );
    }
}
