//! What the plugin decides, in safe code over plain slices: which table
//! entry a communicator gets, which cost-table entries it rewrites, the
//! channel count it asks for, the base latencies it replaces.
//!
//! NCCL (`src/enqueue.cc`, `ncclGetAlgoInfo`, v2.28.3-1) fills its cost
//! table with its own times in µs, `NCCL_ALGO_PROTO_IGNORE` (-1) where an
//! algorithm and protocol cannot run, calls the plugin, then takes the
//! cheapest entry that is 0 or more (`topoGetAlgoInfo`: the first strictly
//! smaller, algorithms then protocols in index order); a non-zero channel
//! count from the plugin replaces the one NCCL worked out. So the plugin
//! writes its predicted time into every entry it has a cost for and NCCL
//! left selectable, leaves -1 entries and entries it has no cost for as
//! they are, and asks for the channels of the entry NCCL will then pick
//! when that entry is one of its own. `numPipeOps` (calls aggregated in
//! a group) and `regBuff` (registered buffers) are no keys of the table:
//! a call costs the same either way.

use crate::abi::{ALGO_PROTO_IGNORE, NUM_ALGORITHMS, NUM_PROTOCOLS, TunerConstantsV5};
use crate::log::Log;
use contend_nccl::tuner_table::{self, Collective, CommTable, TunerTable};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable naming the table file.
pub const TABLE_VAR: &str = "CONTEND_TUNER_TABLE";

/// Why init failed (NCCL then fails the communicator's init).
#[derive(Debug, PartialEq, Eq)]
pub enum InitError {
    /// The table file cannot be read.
    Read,
    /// The table file breaks a rule of its format.
    Malformed,
}

/// One communicator's plugin state (the `context` NCCL keeps for it).
#[derive(Debug)]
pub struct Tuner {
    log: Log,
    ranks: usize,
    nodes: usize,
    comm: Option<CommTable>,
    /// Per collective: whether a call without an entry was reported.
    said: [AtomicBool; 5],
}

impl Tuner {
    /// Loads the entry for `ranks` ranks on `nodes` nodes from the table
    /// at `path` (`None`: no table named), saying in NCCL's log what it
    /// found. No table and no entry both leave every call to NCCL.
    pub fn load(
        path: Option<&Path>,
        ranks: usize,
        nodes: usize,
        log: Log,
    ) -> Result<Tuner, InitError> {
        let mut t = Tuner {
            log,
            ranks,
            nodes,
            comm: None,
            said: Default::default(),
        };
        let Some(path) = path else {
            log.info(&format!(
                "{TABLE_VAR} is not set: NCCL's own choices for every call of this communicator ({ranks} ranks, {nodes} node(s))"
            ));
            return Ok(t);
        };
        let shown = path.display().to_string();
        // regular files only, at most 64 MiB: a FIFO here would block NCCL's
        // init forever, /dev/zero would grow the host process without end
        let text = contend_topo::bounded_read::read_text(path).map_err(|e| {
            log.warn(&format!(
                "cannot read the table {shown} ({TABLE_VAR}): {}",
                e.reason()
            ));
            InitError::Read
        })?;
        let table: TunerTable = tuner_table::parse(&shown, &text).map_err(|e| {
            log.warn(&format!("malformed table: {e}"));
            InitError::Malformed
        })?;
        match table.comm(ranks, nodes) {
            None => {
                let have: Vec<String> = table
                    .comms()
                    .iter()
                    .map(|c| format!("{}/{}", c.ranks(), c.nodes()))
                    .collect();
                log.info(&format!(
                    "table {shown} ({}) has no entry for {ranks} ranks on {nodes} node(s) (it has ranks/nodes {}): NCCL's own choices for every call of this communicator",
                    table.stamp(),
                    if have.is_empty() { "none".to_string() } else { have.join(", ") }
                ));
            }
            Some(c) => {
                log.info(&format!(
                    "table {shown} ({}; {} for {}): {ranks} ranks on {nodes} node(s): {} size range(s){}",
                    table.stamp(),
                    table.nccl(),
                    table.topology(),
                    c.ranges().len(),
                    c.note().map(|n| format!("; {n}")).unwrap_or_default()
                ));
                t.comm = Some(c.clone());
            }
        }
        Ok(t)
    }

    pub fn log(&self) -> Log {
        self.log
    }

    /// Replaces NCCL's base latencies with the table's (tuner v5+), saying
    /// which; entries the table does not name keep NCCL's value.
    pub fn set_constants(&self, c: &mut TunerConstantsV5) {
        let Some(comm) = &self.comm else { return };
        let mut changed = Vec::new();
        for b in comm.base_latencies() {
            let (a, p) = (b.algorithm() as usize, b.protocol() as usize);
            if a < NUM_ALGORITHMS && p < NUM_PROTOCOLS {
                let old = c.base_latencies[a][p];
                c.base_latencies[a][p] = b.us();
                changed.push(format!(
                    "{}/{} {old:.2} -> {:.2}",
                    b.algorithm().log_name(),
                    b.protocol().log_name(),
                    b.us()
                ));
            }
        }
        if !changed.is_empty() {
            self.log.info(&format!(
                "NCCL's baseLatencies (us) for this communicator: {}",
                changed.join(", ")
            ));
        }
    }

    /// Says once per collective that a call has no entry.
    fn fallback(&self, coll: i32, bytes: u64, why: &str) {
        let slot = Collective::from_func(coll).map_or(0, |c| c as usize);
        if !self.said[slot].swap(true, Ordering::Relaxed) {
            let name = Collective::from_func(coll)
                .map_or_else(|| format!("function {coll}"), |c| c.to_string());
            self.log.info(&format!(
                "no entry for {name} of {bytes} B on {} ranks, {} node(s) ({why}): NCCL's own choice (said once per collective)",
                self.ranks, self.nodes
            ));
        }
    }

    /// Writes the predicted times of a call of `bytes` of `coll` into
    /// `table` (`num_algo` × `num_proto`, row-major, as NCCL lays it out)
    /// and returns the channels to ask for, if NCCL will pick one of the
    /// entries written. Nothing written: `None`, the table as it was.
    pub fn costs(&self, coll: i32, bytes: u64, table: &mut [f32], num_proto: usize) -> Option<i32> {
        let comm = self.comm.as_ref()?;
        let Some(c) = Collective::from_func(coll) else {
            self.fallback(coll, bytes, "not a collective the table knows");
            return None;
        };
        let Some(range) = comm.range(c, bytes) else {
            self.fallback(coll, bytes, "no size range holds it");
            return None;
        };
        let mut written: Vec<(usize, i32)> = Vec::new();
        for k in range.costs() {
            let (a, p) = (k.algorithm() as usize, k.protocol() as usize);
            if p >= num_proto {
                continue;
            }
            let i = a * num_proto + p;
            // NCCL left it out (-1) or could not cost it: not selectable
            match table.get_mut(i) {
                Some(v) if *v != ALGO_PROTO_IGNORE && *v >= 0.0 => {
                    *v = range.time_at(k, bytes) as f32;
                    written.push((i, k.channels() as i32));
                }
                _ => {}
            }
        }
        if written.is_empty() {
            self.fallback(
                coll,
                bytes,
                "NCCL leaves none of its algorithms and protocols selectable",
            );
            return None;
        }
        // the entry NCCL will pick: the first strictly cheapest that is 0 or more
        let mut best: Option<(usize, f32)> = None;
        for (i, v) in table.iter().enumerate() {
            if *v != ALGO_PROTO_IGNORE && *v >= 0.0 && best.is_none_or(|b| *v < b.1) {
                best = Some((i, *v));
            }
        }
        let best = best?.0;
        written.iter().find(|w| w.0 == best).map(|w| w.1)
    }
}
