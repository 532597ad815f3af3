//! # contend-fit
//!
//! Closes the loop between the simulator and the hardware: pairs each
//! measurement ([`contend_import`] loads them) with its simulated twin,
//! fits a chosen subset of [`contend_sim::ModelParams`] on the
//! microbenchmarks only, predicts the held-out allreduce and verify-step
//! measurements with the default and the fitted constants, and reports
//! errors, winner agreement and a verdict with SVG charts. Public rigs
//! (published figures of other people's boxes) are fitted the same way.
//!
//! | module | what it is for |
//! |---|---|
//! | [`mod@calibrate`] | the whole calibration, resumable, and what it refuses to fit ([`calibrate::guard`]) |
//! | [`checkpoint`] | results a long run (calibrate, advise) hands out as each completes and takes back on a resume |
//! | [`fit`] | the fit itself: the constants' catalogue, which ones the data pins ([`fit::pin`]), Nelder–Mead and bootstrap |
//! | [`twin`] | the simulated twin of a measurement and its prediction |
//! | [`eval`] | held-out error statistics, winner agreement, the verdict |
//! | [`report`] | `report.md` and its charts from a calibration's `fit.json` |
//! | [`figures`] | published microbenchmark figures (`figures.toml`) |
//! | [`figure_twin`] | the simulated twin of a published figure |
//! | [`rig`], [`rig_fit`], [`rig_report`] | a public rig: its figures and topologies, its fit, its report |
//!
//! Errors are [`contend_import::CalibError`], shared by the calibration
//! crates. No module imports one that imports it back: `python3
//! tools/import_cycles.py crates/contend-fit/src` prints nothing.

pub mod calibrate;
pub mod checkpoint;
pub mod eval;
pub mod figure_twin;
pub mod figures;
pub mod fit;
pub mod report;
mod report_charts;
pub mod rig;
pub mod rig_fit;
pub mod rig_report;
pub mod twin;

pub use calibrate::{CalibrateOptions, FitSummary, PointResult, calibrate};
pub use checkpoint::{CalibStep, Checkpoint, ConstantSet, Prediction};
pub use contend_import::CalibError;
pub use fit::{DEFAULT_SUBSET, FitOptions, FitParam, NCCL_LOG_SUBSET, catalogue, select};
pub use report::write_report;
