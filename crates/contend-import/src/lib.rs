//! # contend-import
//!
//! Reads what measuring tools print, so calibration and the TUI work from
//! checked records of one schema ([`contend_workload::ResultRecord`]):
//! nccl-tests text and `-J` JSON, p2pBandwidthLatencyTest, nvbandwidth,
//! p2pmark, and contend's own JSON Lines. Every reader of a tool's log is
//! here; the readers of topology pastes (`lspci`, `nvidia-smi topo`,
//! NCCL's topology XML) stay in `contend-topo`, beside the model they build.
//!
//! | module | what it is for |
//! |---|---|
//! | [`import`] | detecting a tool's output and turning it into records, with what was skipped and why |
//! | [`nccl_tests`] | nccl-tests logs (text and JSON) in, and predictions printed in nccl-tests' table out |
//! | [`jsonl`] | contend's own JSON Lines of result records |
//! | [`measure`] | loading measurement files: checking each record against a topology and classifying it for calibration; the physics check every figure passes |
//! | [`fit_stop`] | why a fit stopped (constants unpinned or on a bound), the payloads of the shared error |
//! | [`CalibError`] | the error of every calibration crate, naming the file and line at fault |
//!
//! The fitting is `contend-fit`'s and the advice `contend-advise`'s; the
//! crates layer one way (import, then fit, then advise). No module imports
//! one that imports it back: `python3 tools/import_cycles.py
//! crates/contend-import/src` prints nothing.
//!
//! ```
//! use contend_import::{nccl_tests_table, parse_nccl_tests};
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

mod error;
pub mod fit_stop;
pub mod import;
pub mod jsonl;
pub mod measure;
pub mod nccl_tests;

pub use error::CalibError;
pub use measure::{Measurement, load_measurements};
pub use nccl_tests::{import_nccl_tests, nccl_tests_table, parse_nccl_tests};
