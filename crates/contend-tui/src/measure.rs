//! Measured points to lay over the simulated ones: JSON Lines of the shared
//! [`ResultRecord`] schema, as `contend hw run` and `contend hw nccl` write.

use contend_import::CalibError;
use contend_topo::Picos;
use contend_workload::{
    Algorithm, LaunchMode, Measured, Placement, ResultRecord, Scenario, Skew, Source, Workload,
    WorkloadKind,
};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A measurements file that cannot be used, and where.
#[derive(Debug, Error)]
pub enum MeasureError {
    #[error("cannot read measurements: {0}")]
    Read(#[from] contend_topo::bounded_read::ReadError),
    #[error("{file}:{line}: not a result record: {message}")]
    Parse {
        file: String,
        line: usize,
        message: String,
    },
}

/// Parses JSON Lines of result records; blank lines and `#` comments are
/// skipped. The reader is contend-import's, the one calibration uses; a
/// line that is not a record is this file's located error.
pub fn parse_measurements(file: &str, text: &str) -> Result<Vec<ResultRecord>, MeasureError> {
    let recs = contend_import::jsonl::parse_jsonl(file, text).map_err(|e| match e {
        CalibError::Record {
            file,
            line,
            message,
        } => MeasureError::Parse {
            file,
            line,
            message,
        },
        CalibError::File { file, message } => MeasureError::Parse {
            file,
            line: 0,
            message,
        },
        other => MeasureError::Parse {
            file: file.to_string(),
            line: 0,
            message: other.to_string(),
        },
    })?;
    check_measurements(file, &recs)?;
    Ok(recs.into_iter().map(|(_, r)| r).collect())
}

/// Checks records (each with its line in `file`) that any reader loaded:
/// the charts plot sizes and times on log scales, so both must be positive
/// and inside the scenario limits, or the record is a located error.
pub fn check_measurements(file: &str, recs: &[(usize, ResultRecord)]) -> Result<(), MeasureError> {
    for (line, r) in recs {
        let bad = |message: String| MeasureError::Parse {
            file: file.to_string(),
            line: *line,
            message,
        };
        let t = r.stats.median_ns;
        if !(t.is_finite() && t > 0.0) {
            return Err(bad(format!(
                "field `stats.median_ns`: {t} ns is not a positive time"
            )));
        }
        if r.size_bytes > contend_workload::limits::MAX_SIZE.0 {
            return Err(bad(format!(
                "field `size_bytes`: {} B is above the largest size contend runs ({})",
                r.size_bytes,
                contend_workload::limits::MAX_SIZE
            )));
        }
    }
    Ok(())
}

/// Reads a measurements file (JSON Lines of result records).
pub fn load_measurements(path: &Path) -> Result<Vec<ResultRecord>, MeasureError> {
    let file = path.display().to_string();
    let text = contend_topo::bounded_read::read_text(path)?;
    parse_measurements(&file, &text)
}

/// The measurement files that sit beside a calibrated params file
/// (`calibration/<machine>/params.toml` next to its `*.jsonl`), sorted.
pub fn measurements_beside(params: &Path) -> Vec<PathBuf> {
    let dir = match params.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return vec![];
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    v
}

/// Measured records laid over the simulated charts, and whether they are shown.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    pub records: Vec<ResultRecord>,
    pub show: bool,
}

impl Overlay {
    /// Shown from the start when there is anything to show. Records of
    /// `--emulate-ranks` runs (every rank on one GPU) are dropped: their
    /// timings are not a machine's.
    pub fn new(mut records: Vec<ResultRecord>) -> Overlay {
        records.retain(|r| !r.is_emulated());
        Overlay {
            show: !records.is_empty(),
            records,
        }
    }

    /// Shows or hides the measured points (never shown when there are none).
    pub fn toggle(&mut self) {
        self.show = !self.show && !self.records.is_empty();
    }

    /// The records that belong on the charts of `key`.
    pub(crate) fn matching<'a>(
        &'a self,
        key: &'a MeasureKey,
    ) -> impl Iterator<Item = &'a ResultRecord> + 'a {
        self.records.iter().filter(move |r| matches(r, key))
    }
}

/// What the charts compare a measurement by, before its [`Variant`]: the
/// workload, the rank count and (for contend's kernels) the placement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MeasureKey {
    pub workload: WorkloadKind,
    pub ranks: usize,
    pub placement: Placement,
}

/// Whether a hardware record belongs on the current charts: the same
/// workload and rank count; contend's kernels at the placement shown (NCCL
/// places its own buffers: its records are told apart by their
/// environment, [`NcclPath`]).
pub(crate) fn matches(r: &ResultRecord, k: &MeasureKey) -> bool {
    r.source != Source::Sim
        && !r.is_emulated()
        && r.workload == k.workload
        && r.ranks.len() == k.ranks
        && (series_of(r) == Measured::NCCL || r.placement.is_none_or(|p| p == k.placement))
        && r.verified != Some(false)
}

/// The measured series a record belongs to: its algorithm, or NCCL for
/// NCCL's records.
pub(crate) fn series_of(r: &ResultRecord) -> Measured {
    if r.source == Source::Nccl {
        Measured::NCCL
    } else {
        r.algorithm
    }
}

/// How NCCL moved the data: over P2P, or staged through host memory
/// (`NCCL_P2P_DISABLE=1`, [`ResultRecord::nccl_p2p_disabled`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NcclPath {
    P2p,
    P2pDisabled,
}

/// The workload's shape between collectives: back to back, or with the
/// compute gap and arrival skew of the scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Shape {
    Gapless,
    Gapped,
}

impl Shape {
    /// The shape of a collective workload (a transfer has none: gapless).
    pub fn of(w: &Workload) -> Shape {
        match w.gap_and_skew() {
            Some((gap, skew)) if gap > Picos::ZERO || skew != Skew::None => Shape::Gapped,
            _ => Shape::Gapless,
        }
    }
}

/// What a measurement or a simulation ran beyond the algorithm: the launch
/// mode, NCCL's path (NCCL only) and the workload's shape. A measurement is
/// only ever laid over a simulation of the same variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Variant {
    pub launch: LaunchMode,
    pub nccl: Option<NcclPath>,
    pub shape: Shape,
}

impl Variant {
    /// The variant `sc` simulates `alg` in.
    pub fn of_scenario(sc: &Scenario, alg: Algorithm) -> Variant {
        Variant {
            launch: sc.launch_of(alg),
            nccl: (alg == Algorithm::Nccl).then_some(if sc.nccl().env.p2p_disable {
                NcclPath::P2pDisabled
            } else {
                NcclPath::P2p
            }),
            shape: Shape::of(sc.workload()),
        }
    }

    /// The variant the hardware ran `r` in. A verify step says whether it
    /// had gaps (`extra.gap_and_skew`); measured allreduces (contend's
    /// batches, nccl-tests) run back to back unless they say otherwise. A
    /// record that says nothing of its shape is taken to have `assumed`.
    pub fn of_record(r: &ResultRecord, assumed: Shape) -> Variant {
        let shape = match (r.extra.timing.gap_and_skew, r.workload) {
            (Some(true), _) => Shape::Gapped,
            (Some(false), _) | (None, WorkloadKind::Allreduce) => Shape::Gapless,
            (None, _) => assumed,
        };
        Variant {
            launch: r.launch,
            nccl: (series_of(r) == Measured::NCCL).then_some(if r.nccl_p2p_disabled() {
                NcclPath::P2pDisabled
            } else {
                NcclPath::P2p
            }),
            shape,
        }
    }

    /// Whether a simulation of this variant can be built from a scenario of
    /// `shape`: a gap can be taken away, but a measured gap whose length the
    /// record does not give cannot be put in.
    pub fn simulable_from(&self, shape: Shape) -> bool {
        !(self.shape == Shape::Gapped && shape == Shape::Gapless)
    }

    /// `eager`, `graph p2p-off`: the launch mode and NCCL's path when P2P was off.
    pub fn label(&self) -> String {
        match self.nccl {
            Some(NcclPath::P2pDisabled) => format!("{} p2p-off", self.launch),
            _ => self.launch.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of `--emulate-ranks` runs never reach the charts.
    #[test]
    fn emulated_records_are_left_out() {
        let line = |emulated: bool| {
            format!(
                r#"{{"source":"hw","scenario":"s","topology":"t","workload":"allreduce","algorithm":"two-shot-push","placement":"peer","fidelity":null,"launch":"eager","ranks":["a","b"],"size_bytes":1024,"total_ns":1.0,"per_op_ns":[1.0],"stats":{{"count":1,"median_ns":1.0,"p10_ns":1.0,"p90_ns":1.0,"p99_ns":1.0,"min_ns":1.0,"max_ns":1.0}},"bandwidth_gbps":null,"verified":true,"events":null,"wall_ns":null,"busiest_link":null,"machine":null,"extra":{{"emulated":{emulated}}}}}"#
            )
        };
        let em = parse_measurements("e.jsonl", &line(true)).unwrap();
        assert!(em[0].is_emulated());
        let o = Overlay::new(em.clone());
        assert!(o.records.is_empty() && !o.show);
        let key = MeasureKey {
            workload: WorkloadKind::Allreduce,
            ranks: 2,
            placement: Placement::Peer,
        };
        assert!(!matches(&em[0], &key));
        let real = parse_measurements("r.jsonl", &line(false)).unwrap();
        assert!(matches(&real[0], &key));
        let o = Overlay::new(em.into_iter().chain(real).collect());
        assert_eq!(o.records.len(), 1);
        assert!(o.show);
    }

    #[test]
    fn bad_line_is_located() {
        let e = parse_measurements("m.jsonl", "\n# comment\n{\"source\": \"hw\"}\n").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("m.jsonl:3: not a result record"), "{s}");
    }

    #[test]
    fn times_and_sizes_that_cannot_be_charted_are_located() {
        let rec = |median: f64, size: u64| {
            format!(
                r#"{{"source":"hw","scenario":"s","topology":"t","workload":"allreduce","algorithm":"one-shot-pull","placement":"peer","fidelity":null,"launch":"eager","ranks":["gpu0","gpu1"],"size_bytes":{size},"total_ns":1.0,"per_op_ns":[1.0],"stats":{{"count":1,"median_ns":{median:?},"p10_ns":1.0,"p90_ns":1.0,"p99_ns":1.0,"min_ns":1.0,"max_ns":1.0}},"bandwidth_gbps":null,"verified":true,"events":null,"wall_ns":null,"busiest_link":null,"machine":null,"extra":{{}}}}"#
            )
        };
        assert_eq!(
            parse_measurements("m.jsonl", &rec(10.0, 1024))
                .unwrap()
                .len(),
            1
        );
        for (line, field) in [
            (rec(-1.0, 1024), "stats.median_ns"),
            (rec(0.0, 1024), "stats.median_ns"),
            (rec(1.0, u64::MAX), "size_bytes"),
        ] {
            let e = parse_measurements("m.jsonl", &format!("{}\n{line}\n", rec(10.0, 1024)))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("m.jsonl:2: ") && e.contains(&format!("field `{field}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn empty_file_is_no_points() {
        assert!(parse_measurements("m.jsonl", "\n\n").unwrap().is_empty());
    }
}
