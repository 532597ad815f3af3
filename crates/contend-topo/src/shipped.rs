//! The topologies shipped in `topologies/`, embedded so the binary works
//! from any directory. A scenario may name one by its stem.

use crate::{TopoError, Topology, parse_topology};

/// (stem, TOML text) of every shipped topology.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "pro6000-8x-2socket",
        include_str!("../../../topologies/pro6000-8x-2socket.toml"),
    ),
    (
        "pro6000-8x-2switch",
        include_str!("../../../topologies/pro6000-8x-2switch.toml"),
    ),
    (
        "pro6000-4x-1socket",
        include_str!("../../../topologies/pro6000-4x-1socket.toml"),
    ),
    (
        "rtx4090-8x-gen4",
        include_str!("../../../topologies/rtx4090-8x-gen4.toml"),
    ),
    (
        "l40s-8x-2socket",
        include_str!("../../../topologies/l40s-8x-2socket.toml"),
    ),
    ("h200-2x", include_str!("../../../topologies/h200-2x.toml")),
    ("h200-1x", include_str!("../../../topologies/h200-1x.toml")),
];

/// The shipped topology called `stem`, parsed.
pub fn get(stem: &str) -> Option<Result<Topology, TopoError>> {
    SHIPPED
        .iter()
        .find(|(s, _)| *s == stem)
        .map(|(s, text)| parse_topology(&format!("topologies/{s}.toml"), text))
}

/// The TOML text of the shipped topology called `stem`.
pub fn text(stem: &str) -> Option<&'static str> {
    SHIPPED.iter().find(|(s, _)| *s == stem).map(|(_, t)| *t)
}

/// A topology named on a command line: a file path, else the stem of a
/// shipped topology. A path that exists is read as a file (a folder, FIFO
/// or device is refused as one); an unknown name lists the shipped names.
pub fn resolve(name: &str) -> Result<Topology, TopoError> {
    let p = std::path::Path::new(name);
    if p.exists() {
        return crate::load_topology(p);
    }
    match get(name) {
        Some(r) => r,
        None => Err(TopoError::at(
            None,
            crate::TopoErrorKind::Invalid(format!(
                "`{name}` is neither a topology file nor a shipped topology ({})",
                SHIPPED
                    .iter()
                    .map(|(s, _)| *s)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        )),
    }
}
