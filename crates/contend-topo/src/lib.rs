//! # contend-topo
//!
//! The machine model of `contend`: unit newtypes ([`Picos`], [`Bytes`],
//! [`BytesPerSec`]), nodes (GPUs, PCIe switches, root complexes, host memory,
//! CPU interconnects) and links (PCIe by generation and width, NVLink, CPU
//! links, memory), the route a TLP takes between two endpoints, and the
//! topology TOML format with errors that name file, line, column and field.
//! Every number is checked against the stated [`limits`] when a topology is
//! built, and unit arithmetic saturates instead of wrapping ([`units`]).
//!
//! ```
//! use contend_topo::{parse_topology, Bytes};
//! let topo = parse_topology("inline.toml", r#"
//!     name = "two GPUs under one root complex"
//!     [[node]]
//!     id = "rc0"
//!     kind = "root_complex"
//!     [[node]]
//!     id = "mem0"
//!     kind = "host_memory"
//!     [[node]]
//!     id = "gpu0"
//!     kind = "gpu"
//!     sms = 188
//!     memory_bandwidth_gbps = 1792
//!     [[node]]
//!     id = "gpu1"
//!     kind = "gpu"
//!     sms = 188
//!     memory_bandwidth_gbps = 1792
//!     [[link]]
//!     a = "gpu0"
//!     b = "rc0"
//!     kind = "pcie"
//!     gen = 5
//!     width = 16
//!     [[link]]
//!     a = "gpu1"
//!     b = "rc0"
//!     kind = "pcie"
//!     gen = 5
//!     width = 16
//!     [[link]]
//!     a = "mem0"
//!     b = "rc0"
//!     kind = "memory"
//!     bandwidth_gbps = 300
//! "#).unwrap();
//! let (g0, g1) = (topo.lookup("gpu0").unwrap(), topo.lookup("gpu1").unwrap());
//! assert_eq!(topo.route(g0, g1).unwrap().hops.len(), 2); // gpu0 -> rc0 -> gpu1
//! assert_eq!(Bytes::parse_size("42 KiB").unwrap(), Bytes(43008));
//! ```

pub mod bounded_read;
mod error;
mod file;
pub mod gpu_model;
pub mod import;
pub mod limits;
mod model;
pub mod pcie;
pub mod relative_path;
pub mod shipped;
mod show;
pub mod units;
mod write;
pub mod xml;

pub use error::{Lines, Location, TopoError, TopoErrorKind, named_field, toml_key_path};
pub use file::{load_topology, parse_topology};
pub use limits::LimitError;
pub use model::{
    CollapsePer, CollapseSpec, CrossSocketP2p, GpuSpec, Hop, Link, LinkIdx, LinkKind, LinkSpec,
    NoP2p, Node, NodeId, NodeIdx, NodeKind, P2p, P2pSpec, PairWithoutP2p, PcieSpec,
    RootComplexSpec, Route, SwitchSpec, Topology, TopologySpec,
};
pub use pcie::{PcieGen, TlpKind};
pub use show::render_tree;
pub use units::{Bytes, BytesParseError, BytesPerSec, Nanos, Picos};
pub use write::{CollapseEntry, LinkEntry, NodeEntry, P2pEntry, TopologyFile};
