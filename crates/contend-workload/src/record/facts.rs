//! The facts a record carries beyond the common fields: of the simulator,
//! the kernel, a stream, an aggregate, the timing, an import, NCCL's
//! decisions, and [`Extra`], the map of them that JSON flattens.

use super::{Resource, ResultRecord};
use crate::kinds::Dtype;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// The busiest resource of a simulated run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkUse {
    /// `gpu0->rc0`, `rc0 p2p`.
    pub link: Resource,
    /// Busy fraction over the run, 0..1.
    pub utilisation: f64,
}

/// `extra.group`: the hierarchical kernels' group size, or the label that
/// ties probe streams measured at the same time together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GroupTag {
    Ranks(u32),
    Label(String),
}

/// Simulator facts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SimFacts {
    /// Collectives simulated back to back.
    pub collectives: Option<u64>,
    /// A sentence when an algorithm fell back to another shape.
    pub note: Option<String>,
    /// What bound the run (collectives).
    pub binding: Option<Binding>,
}

/// What bound a simulated collective, read from the fabric while its data
/// moved (`contend_sim`'s `binding` module says how).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Binding {
    /// Launches and barriers took most of each rank's time.
    Sync {
        /// Their share of the ranks' busy time.
        share: f64,
    },
    /// A resource ran near its capacity while data moved.
    Resource {
        resource: Resource,
        /// Busy fraction of the time data moved.
        busy: f64,
    },
    /// Posted writes through a port went at its collapsed rate.
    Collapse {
        resource: Resource,
        /// Share of the port's traffic that went collapsed.
        share: f64,
    },
    /// Cross-socket P2P streams were held by their per-stream cap.
    CrossSocketStream { resource: Resource },
    /// No resource near capacity and loads dominated: reads waited on their
    /// round trips (the outstanding-load window).
    ReadWindow {
        /// The busiest resource's busy fraction while data moved.
        busiest: f64,
    },
    /// No resource near capacity and stores dominated: the stores' issue
    /// rate and latency.
    StoreIssue { busiest: f64 },
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |x: f64| format!("{:.0}%", x * 100.0);
        match self {
            Binding::Sync { share } => {
                write!(f, "launch + barriers ({} of rank time)", pct(*share))
            }
            Binding::Resource { resource, busy } => {
                write!(f, "{} {resource} ({})", resource.class(), pct(*busy))
            }
            Binding::Collapse { resource, share } => write!(
                f,
                "posted-write collapse at {resource} ({} of its writes)",
                pct(*share)
            ),
            Binding::CrossSocketStream { resource } => {
                write!(f, "cross-socket P2P stream cap ({resource})")
            }
            Binding::ReadWindow { busiest } => {
                write!(f, "read window (busiest resource {})", pct(*busiest))
            }
            Binding::StoreIssue { busiest } => {
                write!(f, "store issue (busiest resource {})", pct(*busiest))
            }
        }
    }
}

/// The kernel's launch shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelFacts {
    /// Blocks the scenario allows.
    pub blocks: Option<u32>,
    pub threads: Option<u32>,
    /// Blocks the backend launched for this size.
    pub grid: Option<u32>,
    /// Hierarchical group size (allreduce) or the probe group's label.
    pub group: Option<GroupTag>,
    /// `contend hw run --emulate-ranks`: every rank ran on one GPU, each on
    /// its own stream with its own buffers. The result was checked like any
    /// other; the timing is not a machine's, so calibration, reports and the
    /// TUI leave such records out.
    pub emulated: Option<bool>,
}

impl ResultRecord {
    /// Whether this record comes from `--emulate-ranks` (see
    /// [`KernelFacts::emulated`]).
    pub fn is_emulated(&self) -> bool {
        self.extra.kernel.emulated == Some(true)
    }
    /// Whether NCCL ran with P2P disabled (`NCCL_P2P_DISABLE=1` in the
    /// record's environment), so it staged through host memory. The one
    /// rule calibration (NCCL's placement) and the TUI's overlay (which
    /// simulation a record is laid over) class NCCL records by.
    pub fn nccl_p2p_disabled(&self) -> bool {
        self.extra.nccl.var("NCCL_P2P_DISABLE") == Some("1")
    }
}

/// What a transfer stream or probe did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamFacts {
    /// Node ids of the simulated stream's ends.
    pub from: Option<String>,
    pub to: Option<String>,
    /// Probe target: `host`, `peer` or `local`.
    pub target: Option<crate::ProbeTarget>,
    pub iterations: Option<u32>,
    /// Ping-pong with the barriers' system fences.
    pub fenced: Option<bool>,
    /// Where a ping-pong's flags live.
    pub flags: Option<crate::FlagMemory>,
    /// What one per-op entry is (a sentence for people).
    pub per_op: Option<String>,
    /// Streams measured at the same time as this one (itself included).
    pub concurrent_streams: Option<u32>,
    /// The pattern a stream came from, or the streams an aggregate record
    /// sums: a pattern's label (`all-to-all`, `stagger +3`), or `all` for
    /// every stream of the run.
    pub pattern: Option<String>,
    /// When the stream started after the run began, us (absent: at once).
    pub start_us: Option<f64>,
}

/// The numbers of an aggregate record ([`super::Measured::Aggregate`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregateFacts {
    /// Streams summed.
    pub streams: Option<u32>,
    /// Sum of the streams' bandwidths, GB/s (what p2pmark-style tools call
    /// the aggregate; the record's `bandwidth_gbps` is every byte over the
    /// span instead).
    pub aggregate_gbps: Option<f64>,
    /// The slowest stream's bandwidth, the median stream's (nearest rank,
    /// as [`super::Stats`]) and the fastest's, GB/s.
    pub min_gbps: Option<f64>,
    pub median_gbps: Option<f64>,
    pub max_gbps: Option<f64>,
}

/// How the hardware timed a measurement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingFacts {
    /// The timing method, for people.
    pub timing: Option<String>,
    pub dtype: Option<Dtype>,
    pub repeats: Option<u32>,
    /// Launches in the batch `total_ns` times.
    pub batch_ops: Option<u32>,
    pub batch_mean_ns: Option<f64>,
    pub sync_median_ns: Option<f64>,
    pub sync_p10_ns: Option<f64>,
    pub sync_p90_ns: Option<f64>,
    pub algbw_gbps: Option<f64>,
    pub busbw_gbps: Option<f64>,
    /// Verification tolerance (relative).
    pub tolerance: Option<f64>,
    pub seed: Option<u64>,
    pub seeds: Option<Vec<u64>>,
    /// Verify steps: allreduces per step, per-allreduce median, whether
    /// compute gaps and skew were applied.
    pub allreduces: Option<u32>,
    pub per_allreduce_median_ns: Option<f64>,
    pub gap_and_skew: Option<bool>,
}

/// Facts of a record imported from another tool's output (`contend
/// import`): nccl-tests text or JSON, p2pBandwidthLatencyTest, nvbandwidth,
/// p2pmark.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportFacts {
    /// The tool: `nccl-tests`, `nccl-tests-json`, `p2pBandwidthLatencyTest`,
    /// `nvbandwidth`, `p2pmark`.
    pub format: Option<String>,
    /// The tool's version as it printed it (`2.17.1`, `v0.8`).
    pub tool_version: Option<String>,
    /// The test that produced the figure (`all_reduce_perf`,
    /// `device_to_device_memcpy_read_ce`, `topology probe +3`).
    pub test: Option<String>,
    /// Hosts the run spans (more than one: not one box).
    pub hosts: Option<Vec<String>>,
    /// What moved the bytes: `copy` (copy engine) or `sm` (kernel loads/stores).
    pub engine: Option<String>,
    /// `write` (the engine's GPU pushes), `read` (it pulls), `bidirectional`.
    pub direction: Option<String>,
    /// What the tool's number is when it is not this stream's own rate
    /// (`mean of 8 concurrent streams`, `half of the bidirectional sum`).
    pub value: Option<String>,
    /// The old nccl-tests `error` column (largest deviation), out of place and in place.
    pub max_error: Option<f64>,
    pub in_place_max_error: Option<f64>,
    /// Elements per rank.
    pub count: Option<u64>,
    /// nccl-tests' type column (`bfloat16`, `float`).
    #[serde(rename = "type")]
    pub element_type: Option<String>,
    pub redop: Option<String>,
    pub in_place_us: Option<f64>,
    pub in_place_algbw_gbps: Option<f64>,
    pub in_place_busbw_gbps: Option<f64>,
    pub in_place_wrong: Option<u64>,
}

/// NCCL's version, the `NCCL_*` environment a run used, and NCCL's
/// decisions for the call: the replica's in a simulated `nccl` record,
/// what NCCL printed (`NCCL_DEBUG=INFO`) in a hardware one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NcclFacts {
    pub nccl_version: Option<String>,
    /// `NCCL_*` variables and their values (`NCCL_P2P_DISABLE = "1"`).
    pub env: BTreeMap<String, String>,
    /// Transport per connection, channels, algorithm and protocol
    /// (`extra.nccl_decisions`).
    pub decisions: Option<contend_nccl::CallFacts>,
    /// The decisions in a line for people (`extra.nccl_line`).
    pub line: Option<String>,
    /// The tuner plugin NCCL's log says it loaded, or why not, and the
    /// lines contend's plugin logged (`extra.nccl_tuner`).
    pub tuner: Option<contend_nccl::log::LogTuner>,
}

impl NcclFacts {
    /// The value of an `NCCL_*` variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }
}

/// Everything a record says beyond the common fields. Serialized as one
/// flat JSON object with sorted keys (the `extra` of earlier files);
/// unknown keys are an error, except `NCCL_*` environment variables.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extra {
    pub sim: SimFacts,
    pub kernel: KernelFacts,
    pub stream: StreamFacts,
    pub aggregate: AggregateFacts,
    pub timing: TimingFacts,
    pub import: ImportFacts,
    pub nccl: NcclFacts,
}

/// The derive-able mirror of [`Extra`]: one flat struct per section.
#[derive(Serialize, Deserialize)]
struct ExtraWire {
    #[serde(flatten)]
    sim: SimFacts,
    #[serde(flatten)]
    kernel: KernelFacts,
    #[serde(flatten)]
    stream: StreamFacts,
    #[serde(flatten)]
    aggregate: AggregateFacts,
    #[serde(flatten)]
    timing: TimingFacts,
    #[serde(flatten)]
    import: ImportFacts,
    nccl_version: Option<String>,
    nccl_decisions: Option<contend_nccl::CallFacts>,
    nccl_line: Option<String>,
    nccl_tuner: Option<contend_nccl::log::LogTuner>,
    /// What no section took: `NCCL_*` variables only.
    #[serde(flatten)]
    rest: BTreeMap<String, serde_json::Value>,
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = ExtraWire {
            sim: self.sim.clone(),
            kernel: self.kernel.clone(),
            stream: self.stream.clone(),
            aggregate: self.aggregate.clone(),
            timing: self.timing.clone(),
            import: self.import.clone(),
            nccl_version: self.nccl.nccl_version.clone(),
            nccl_decisions: self.nccl.decisions.clone(),
            nccl_line: self.nccl.line.clone(),
            nccl_tuner: self.nccl.tuner.clone(),
            rest: self
                .nccl
                .env
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                .collect(),
        };
        // One flat object, absent facts left out, keys sorted (serde_json's
        // map is ordered), as earlier files wrote it.
        let v = serde_json::to_value(&wire).map_err(serde::ser::Error::custom)?;
        let flat: BTreeMap<String, serde_json::Value> = match v {
            serde_json::Value::Object(m) => m.into_iter().filter(|(_, v)| !v.is_null()).collect(),
            _ => BTreeMap::new(),
        };
        flat.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = ExtraWire::deserialize(d)?;
        let mut env = BTreeMap::new();
        for (k, v) in w.rest {
            if !k.starts_with("NCCL_") {
                return Err(serde::de::Error::custom(format!(
                    "unknown field `extra.{k}`"
                )));
            }
            let v = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            env.insert(k, v);
        }
        Ok(Extra {
            sim: w.sim,
            kernel: w.kernel,
            stream: w.stream,
            aggregate: w.aggregate,
            timing: w.timing,
            import: w.import,
            nccl: NcclFacts {
                nccl_version: w.nccl_version,
                env,
                decisions: w.nccl_decisions,
                line: w.nccl_line,
                tuner: w.nccl_tuner,
            },
        })
    }
}

impl Extra {
    /// The key path (`extra.grid`) of the first value in `v` (a record's
    /// `extra` object) that does not deserialize, for error messages.
    pub(crate) fn bad_key(v: &serde_json::Value) -> Option<String> {
        fn first<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<String> {
            serde_path_to_error::deserialize::<_, T>(v)
                .err()
                .map(|e| format!("extra.{}", e.path()))
        }
        first::<SimFacts>(v)
            .or_else(|| first::<KernelFacts>(v))
            .or_else(|| first::<StreamFacts>(v))
            .or_else(|| first::<AggregateFacts>(v))
            .or_else(|| first::<TimingFacts>(v))
            .or_else(|| first::<ImportFacts>(v))
            .or_else(|| {
                let d = v.get("nccl_decisions").filter(|d| !d.is_null())?;
                serde_path_to_error::deserialize::<_, contend_nccl::CallFacts>(d)
                    .err()
                    .map(|e| format!("extra.nccl_decisions.{}", e.path()))
            })
            .or_else(|| {
                let known = serde_json::to_value(ExtraWire {
                    sim: SimFacts::default(),
                    kernel: KernelFacts::default(),
                    stream: StreamFacts::default(),
                    aggregate: AggregateFacts::default(),
                    timing: TimingFacts::default(),
                    import: ImportFacts::default(),
                    nccl_version: None,
                    nccl_decisions: None,
                    nccl_line: None,
                    nccl_tuner: None,
                    rest: BTreeMap::new(),
                })
                .ok()?;
                v.as_object()?
                    .keys()
                    .find(|k| known.get(k.as_str()).is_none() && !k.starts_with("NCCL_"))
                    .map(|k| format!("extra.{k}"))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FlagMemory, ProbeTarget};

    /// A probe stream's target and flags are read as the values the
    /// hardware backend writes (the committed records' spellings), and a
    /// spelling it never writes is refused, naming the ones it does.
    #[test]
    fn stream_target_and_flags_read_as_their_values() {
        let s: StreamFacts =
            serde_json::from_str(r#"{"target":"peer","flags":"host memory"}"#).unwrap();
        assert_eq!(s.target, Some(ProbeTarget::Peer));
        assert_eq!(s.flags, Some(FlagMemory::Host));
        let s: StreamFacts =
            serde_json::from_str(r#"{"target":"local","flags":"each GPU's own memory"}"#).unwrap();
        assert_eq!(s.target, Some(ProbeTarget::Local));
        assert_eq!(s.flags, Some(FlagMemory::OwnMemory));
        let e = serde_json::from_str::<StreamFacts>(r#"{"flags":"in the host"}"#).unwrap_err();
        assert!(e.to_string().contains("host memory"), "{e}");
        assert!(serde_json::from_str::<StreamFacts>(r#"{"target":"hosts"}"#).is_err());
    }
}
