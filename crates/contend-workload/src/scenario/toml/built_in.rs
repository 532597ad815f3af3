//! The scenarios built into the binary: those shipped in `scenarios/`
//! (by stem) and the embedded default a bare `simulate` runs.

use super::parse_scenario;
use crate::scenario::{Scenario, ScenarioError};
use contend_topo::Topology;
use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/shipped_scenarios.rs"));

/// The stems of the scenarios shipped in `scenarios/`, sorted.
pub fn shipped_scenario_names() -> Vec<&'static str> {
    SHIPPED_SCENARIOS.iter().map(|(s, _)| *s).collect()
}

/// The shipped scenario a bare `path` names (its stem, `.toml` optional):
/// (stem, TOML text). A path with a folder in it names a file, never this.
pub(super) fn shipped_scenario(path: &Path) -> Option<(&'static str, &'static str)> {
    let s = path.to_str()?;
    if s.contains('/') || s.contains('\\') {
        return None;
    }
    let stem = s.strip_suffix(".toml").unwrap_or(s);
    SHIPPED_SCENARIOS.iter().find(|(n, _)| *n == stem).copied()
}

/// The embedded default: the EAGLE-3 verify step on 8× RTX PRO 6000, two sockets.
pub const DEFAULT_SCENARIO: &str =
    include_str!("../../../../../scenarios/eagle3-verify-pro6000-2socket.toml");
/// How errors name it: not a file of the user's (a copy of
/// `scenarios/eagle3-verify-pro6000-2socket.toml` built into the binary).
pub const DEFAULT_SCENARIO_NAME: &str =
    "the embedded default scenario (scenarios/eagle3-verify-pro6000-2socket.toml)";

pub fn default_scenario(topology_override: Option<Topology>) -> Result<Scenario, ScenarioError> {
    parse_scenario(
        DEFAULT_SCENARIO_NAME,
        DEFAULT_SCENARIO,
        None,
        topology_override,
    )
}
