//! # contend-calib
//!
//! Closes the loop between the simulator and the hardware: loads
//! measurements (the hardware backend's JSON Lines, nccl-tests logs), pairs
//! each with its simulated twin, fits a chosen subset of
//! [`contend_sim::ModelParams`] on the microbenchmarks only, predicts the
//! held-out allreduce and verify-step measurements with the default and the
//! fitted constants, and reports errors, winner agreement and a verdict with
//! SVG charts. Also: `advise` (which algorithm wins up to which size, per
//! world size), the latency charts of `sweep --plot` and `advise --plot`
//! ([`latency_chart`]) and nccl-tests export of predictions.
//!
//! ```
//! use contend_calib::{nccl_tests_table, parse_nccl_tests};
//! // (`\x23` is `#`: rustdoc would hide lines that start with `# `)
//! let log = "\x23 nThread 1 nGpus 2 minBytes 1024 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
//! \x23       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//!         1024           512  bfloat16     sum      -1     8.90    0.12    0.12      0     8.80    0.12    0.12      0
//! ";
//! let recs: Vec<_> = parse_nccl_tests("log", log).unwrap().into_iter().map(|r| r.1).collect();
//! assert_eq!(recs[0].stats.median_ns, 8900.0);
//! let again: Vec<_> = parse_nccl_tests("again", &nccl_tests_table(&recs)).unwrap()
//!     .into_iter().map(|r| r.1).collect();
//! assert_eq!(recs, again);
//! ```

pub mod advise;
pub mod calibrate;
pub mod checkpoint;
pub mod emit;
pub mod engine_support;
mod error;
pub mod eval;
pub mod figure_twin;
pub mod figures;
pub mod fit;
pub mod import;
pub mod large_size;
pub mod latency_chart;
pub mod measure;
pub mod nccl_tests;
pub mod report;
mod report_charts;
pub mod rig;
pub mod rig_fit;
pub mod rig_report;
pub mod twin;

pub use advise::{WorldAdvice, advice_table, advise};
pub use calibrate::{CalibrateOptions, FitSummary, PointResult, calibrate};
pub use checkpoint::{CalibStep, Checkpoint, ConstantSet, Prediction};
pub use error::CalibError;
pub use fit::{DEFAULT_SUBSET, FitOptions, FitParam, NCCL_LOG_SUBSET, catalogue, select};
pub use measure::{Measurement, load_measurements};
pub use nccl_tests::{import_nccl_tests, nccl_tests_table, parse_nccl_tests};
pub use report::write_report;
