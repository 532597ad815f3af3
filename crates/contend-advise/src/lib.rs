//! # contend-advise
//!
//! What the model tells the software that picks an allreduce: for each
//! world size, which algorithm wins up to which size ([`advise()`]), the
//! settings files that carry it to NCCL's tuner, vLLM, SGLang,
//! TensorRT-LLM and Vidur ([`emit`]), what each engine can actually run
//! ([`engine_support`]), and the latency charts of `contend sweep --plot`
//! and `contend advise --plot` ([`latency_chart`]).
//!
//! | module | what it is for |
//! |---|---|
//! | [`mod@advise`] | the winner per size range and world size, resumable through [`contend_fit::checkpoint`] |
//! | [`emit`] | settings files for NCCL's tuner plugin, contend's tuner, the serving engines and Vidur |
//! | [`engine_support`] | each serving engine's allreduce backends and when they run |
//! | `predict` | every variant simulated at every size and world size: the table advice and the emitters read |
//! | `family` | the advice's families of algorithms ([`advise::Family`]), typed, with their names |
//! | `candidate` | the table's typed key (an algorithm, or NCCL under forced settings) and its one label |
//! | [`latency_chart`] | time per allreduce over size, as an SVG chart |
//!
//! Errors are [`contend_import::CalibError`], shared by the calibration
//! crates. No module imports one that imports it back: `python3
//! tools/import_cycles.py crates/contend-advise/src` prints nothing.

pub mod advise;
mod candidate;
pub mod emit;
pub mod engine_support;
mod family;
pub mod latency_chart;
mod predict;

pub use advise::{WorldAdvice, advice_table, advise};
pub use contend_import::CalibError;
