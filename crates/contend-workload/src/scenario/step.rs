//! One's own step over any scenario: the ranks, the verify step's shape
//! (hidden size, tokens, layers, allreduces per layer, dtype) and the launch
//! mode, as `--ranks`, `--hidden`, … say them on the command line and the
//! TUI edits them. The scenario is built again from its spec, so every
//! check a scenario file gets applies to the result.

use super::{Scenario, ScenarioError, ScenarioSpec, VerifyStep, Workload};
use crate::kinds::{Dtype, LaunchMode};

/// What the user's own step changes; `None` keeps the scenario's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepOverrides {
    /// The first this many GPUs: the scenario's ranks in order, then the
    /// topology's other GPUs in file order.
    pub ranks: Option<usize>,
    pub hidden: Option<u64>,
    pub tokens: Option<u64>,
    pub layers: Option<u32>,
    pub allreduces_per_layer: Option<u32>,
    pub dtype: Option<Dtype>,
    /// Every algorithm's launch mode (over the scenario's `[algorithm.*]`).
    pub launch: Option<LaunchMode>,
}

impl StepOverrides {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == StepOverrides::default()
    }
    /// Whether it changes the verify step's shape (which turns an
    /// allreduce-sizes workload into a verify step).
    fn shapes_step(&self) -> bool {
        self.hidden.is_some()
            || self.tokens.is_some()
            || self.layers.is_some()
            || self.allreduces_per_layer.is_some()
    }
}

/// A user's step error: which flag, and why.
fn flag_error(flag: &str, message: String) -> ScenarioError {
    ScenarioError::Invalid {
        location: None,
        message: format!("{flag}: {message}"),
    }
}

impl Scenario {
    /// The scenario with the user's step: a verify step keeps its other
    /// fields; an allreduce-sizes workload keeps its sizes under `--dtype`
    /// alone and becomes a verify step (the others from
    /// [`VerifyStep::default`], its gap and skew kept) when the step's shape
    /// is given. A transfer workload runs no allreduce: the step runs on its
    /// topology (every GPU, every algorithm, [`VerifyStep::default`] shaped
    /// by the overrides).
    pub fn with_step(&self, o: &StepOverrides) -> Result<Scenario, ScenarioError> {
        if o.is_empty() {
            return Ok(self.clone());
        }
        let mut spec: ScenarioSpec = self.spec();
        if let Workload::Transfer { .. } = spec.workload {
            // no allreduce of its own: the step on its topology, every GPU
            // and algorithm
            spec.workload = Workload::VerifyStep(VerifyStep::default());
            spec.ranks = spec.topology.gpus();
            spec.algorithms = crate::kinds::Algorithm::ALL.to_vec();
        }
        if let Some(n) = o.ranks {
            let mut order = spec.ranks.clone();
            order.extend(
                spec.topology
                    .gpus()
                    .into_iter()
                    .filter(|g| !spec.ranks.contains(g)),
            );
            if n < 2 || n > order.len() {
                return Err(flag_error(
                    "--ranks",
                    format!(
                        "{n} ranks: an allreduce needs 2 to {} here (the GPUs of `{}`)",
                        order.len(),
                        spec.topology.name
                    ),
                ));
            }
            order.truncate(n);
            spec.ranks = order;
        }
        if let Some(l) = o.launch {
            spec.launch = l;
            for c in spec.per_algorithm.values_mut() {
                c.launch = None;
            }
        }
        spec.workload = match spec.workload {
            Workload::VerifyStep(v) => Workload::VerifyStep(shape(v, o)),
            Workload::Allreduce {
                sizes,
                dtype,
                repeats,
                gap,
                skew,
            } => {
                if o.shapes_step() {
                    Workload::VerifyStep(shape(
                        VerifyStep {
                            dtype,
                            gap,
                            skew,
                            ..VerifyStep::default()
                        },
                        o,
                    ))
                } else {
                    Workload::Allreduce {
                        sizes,
                        dtype: o.dtype.unwrap_or(dtype),
                        repeats,
                        gap,
                        skew,
                    }
                }
            }
            Workload::Transfer { .. } => unreachable!("replaced above"),
        };
        Scenario::new(spec).map_err(|e| match e {
            // a field the flags set: name the flag, not the scenario's field
            ScenarioError::Invalid { message, .. } => flag_error("your step", message),
            other => other,
        })
    }
}

fn shape(v: VerifyStep, o: &StepOverrides) -> VerifyStep {
    VerifyStep {
        hidden: o.hidden.unwrap_or(v.hidden),
        tokens: o.tokens.unwrap_or(v.tokens),
        layers: o.layers.unwrap_or(v.layers),
        allreduces_per_layer: o.allreduces_per_layer.unwrap_or(v.allreduces_per_layer),
        dtype: o.dtype.unwrap_or(v.dtype),
        ..v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::default_scenario;

    #[test]
    fn the_default_step_takes_ones_own_shape_ranks_and_launch() {
        let sc = default_scenario(None).unwrap();
        let o = StepOverrides {
            ranks: Some(4),
            hidden: Some(6144),
            tokens: Some(4),
            launch: Some(LaunchMode::Graph),
            ..Default::default()
        };
        let s = sc.with_step(&o).unwrap();
        assert_eq!(s.ranks(), &sc.ranks()[..4]);
        assert_eq!(s.launch(), LaunchMode::Graph);
        let Workload::VerifyStep(v) = s.workload() else {
            panic!("a verify step")
        };
        assert_eq!((v.hidden, v.tokens), (6144, 4));
        assert_eq!(v.size().0, 6144 * 4 * 2);
        // what was not given is the scenario's
        let Workload::VerifyStep(d) = sc.workload() else {
            panic!()
        };
        assert_eq!((v.layers, v.gap), (d.layers, d.gap));
        // every algorithm's launch, over per-algorithm settings
        for &a in s.algorithms() {
            assert_eq!(s.launch_of(a), LaunchMode::Graph, "{a}");
        }
    }

    #[test]
    fn an_allreduce_scenario_becomes_a_step_only_when_shaped() {
        let sc = default_scenario(None).unwrap();
        let spec = ScenarioSpec {
            workload: Workload::Allreduce {
                sizes: vec![contend_topo::Bytes(4096), contend_topo::Bytes(65536)],
                dtype: Dtype::Bf16,
                repeats: 2,
                gap: contend_topo::Picos::ZERO,
                skew: crate::Skew::None,
            },
            ..sc.spec()
        };
        let a = Scenario::new(spec).unwrap();
        let d = a
            .with_step(&StepOverrides {
                dtype: Some(Dtype::Fp32),
                ..Default::default()
            })
            .unwrap();
        assert!(matches!(
            d.workload(),
            Workload::Allreduce { sizes, dtype: Dtype::Fp32, .. } if sizes.len() == 2
        ));
        let s = a
            .with_step(&StepOverrides {
                tokens: Some(8),
                ..Default::default()
            })
            .unwrap();
        let Workload::VerifyStep(v) = s.workload() else {
            panic!("a verify step")
        };
        assert_eq!((v.tokens, v.hidden), (8, VerifyStep::default().hidden));
    }

    #[test]
    fn a_transfer_scenario_runs_the_step_on_its_topology() {
        let sc = crate::load_scenario(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../scenarios/transfer-shared-link.toml"),
            None,
        )
        .unwrap();
        let s = sc
            .with_step(&StepOverrides {
                ranks: Some(2),
                ..Default::default()
            })
            .unwrap();
        assert!(matches!(s.workload(), Workload::VerifyStep(_)));
        assert_eq!(s.ranks(), &sc.topology().gpus()[..2]);
        assert_eq!(s.algorithms(), crate::kinds::Algorithm::ALL);
    }

    #[test]
    fn a_step_the_box_cannot_run_names_the_flag() {
        let sc = default_scenario(None).unwrap();
        for (o, want) in [
            (
                StepOverrides {
                    ranks: Some(9),
                    ..Default::default()
                },
                "--ranks: 9 ranks: an allreduce needs 2 to 8",
            ),
            (
                StepOverrides {
                    ranks: Some(1),
                    ..Default::default()
                },
                "--ranks: 1 ranks",
            ),
            (
                StepOverrides {
                    hidden: Some(0),
                    ..Default::default()
                },
                "your step: hidden must be above zero",
            ),
        ] {
            let e = sc.with_step(&o).unwrap_err().to_string();
            assert!(e.contains(want), "{o:?}: {e}");
        }
    }
}
