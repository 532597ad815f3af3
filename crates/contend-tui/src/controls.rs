//! The scenario controls: what each one can be set to, which value is
//! chosen, and the scenario (and size sweep) the chosen values describe.

use crate::worker::JobKind;
use contend_topo::{Bytes, NodeIdx, Picos, Topology};
use contend_workload::compare::{AlgorithmSet, algorithm_sets};
use contend_workload::{
    Algorithm, Dtype, Fidelity, LaunchMode, Placement, Scenario, ScenarioError, Skew,
    StepOverrides, VerifyStep, Workload, default_scenario,
};
use std::collections::BTreeSet;
use std::fmt;

/// Sizes of the latency-vs-size sweep: 1 KiB to 64 MiB, doubling.
pub fn default_sweep_sizes() -> Vec<Bytes> {
    (10..=26).map(|p| Bytes(1 << p)).collect()
}

/// What the workload control can be set to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadChoice {
    /// The scenario's verify step (by default EAGLE-3: 61 layers × 2 allreduces of 7168 × 3 × bf16).
    Verify,
    /// Allreduces of one size.
    Allreduce(Bytes),
}

/// The scenario controls, left to right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Workload,
    Ranks,
    /// The verify step's hidden size.
    Hidden,
    /// The verify step's tokens.
    Tokens,
    /// The verify step's layers.
    Layers,
    Algorithms,
    Placement,
    Fidelity,
    /// Every algorithm's launch: eager or graph.
    Launch,
}

pub const FIELDS: [Field; 9] = [
    Field::Workload,
    Field::Ranks,
    Field::Hidden,
    Field::Tokens,
    Field::Layers,
    Field::Algorithms,
    Field::Placement,
    Field::Fidelity,
    Field::Launch,
];

/// Hidden sizes the hidden control steps through (common models'; the
/// scenario's own is added).
const HIDDEN: [u64; 10] = [
    2048, 3072, 4096, 5120, 6144, 7168, 8192, 12288, 16384, 18432,
];
/// Layer counts the layers control steps through (the scenario's own is added).
const LAYERS: [u32; 12] = [1, 2, 4, 8, 16, 28, 32, 40, 48, 61, 64, 80];
/// The most tokens the tokens control reaches.
const MAX_TOKENS: u64 = 64;

/// The value `by` places from `now` in `list` (with `now` added), ends held.
fn step_in<T: Copy + Ord>(list: &[T], now: T, by: isize) -> T {
    let mut v: Vec<T> = list.to_vec();
    if !v.contains(&now) {
        v.push(now);
    }
    v.sort();
    let i = v.iter().position(|x| *x == now).unwrap_or(0) as isize;
    v[(i + by).clamp(0, v.len() as isize - 1) as usize]
}

impl Field {
    /// Position in [`FIELDS`].
    pub fn index(self) -> usize {
        FIELDS.iter().position(|f| *f == self).unwrap_or(0)
    }

    /// The control `by` places to the right (wrapping).
    pub fn step(self, by: isize) -> Field {
        FIELDS[(self.index() as isize + by).rem_euclid(FIELDS.len() as isize) as usize]
    }

    /// The jobs to run again when this control changes (the size sweep
    /// ignores the workload and always runs at flow fidelity).
    pub fn reruns(self) -> &'static [JobKind] {
        match self {
            Field::Workload | Field::Fidelity | Field::Hidden | Field::Tokens | Field::Layers => {
                &[JobKind::Scenario]
            }
            Field::Ranks | Field::Algorithms | Field::Placement | Field::Launch => {
                &[JobKind::Scenario, JobKind::Sweep]
            }
        }
    }
}

/// Values to cycle through and the one chosen.
#[derive(Clone, Debug, PartialEq)]
pub struct Cycle<T> {
    items: Vec<T>,
    at: usize,
}

impl<T> Cycle<T> {
    /// The first of `items` chosen.
    pub fn new(items: Vec<T>) -> Cycle<T> {
        Cycle { items, at: 0 }
    }

    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// Index of the chosen value.
    pub fn index(&self) -> usize {
        self.at
    }

    /// The chosen value, if there is any value.
    pub fn current(&self) -> Option<&T> {
        self.items.get(self.at)
    }

    /// Chooses the value at `i`.
    pub fn select(&mut self, i: usize) {
        self.at = i;
    }

    /// Chooses the value `by` places on, wrapping around.
    pub fn step(&mut self, by: isize) {
        self.at = (self.at as isize + by).rem_euclid(self.items.len().max(1) as isize) as usize;
    }
}

/// What every allreduce choice of the workload control runs, but its size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllreduceTemplate {
    pub dtype: Dtype,
    pub repeats: u32,
    pub gap: Picos,
    pub skew: Skew,
}

impl AllreduceTemplate {
    /// Allreduces of `sizes`.
    pub fn workload(&self, sizes: Vec<Bytes>) -> Workload {
        Workload::Allreduce {
            sizes,
            dtype: self.dtype,
            repeats: self.repeats,
            gap: self.gap,
            skew: self.skew,
        }
    }
}

/// A named set of ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct RankSet {
    /// `all 8`, `socket 0 (4)`, `gpu0+gpu4`.
    pub label: String,
    pub ranks: Vec<NodeIdx>,
}

impl fmt::Display for RankSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// The values of the scenario controls.
#[derive(Clone, Debug)]
pub struct Controls {
    /// The control the arrow keys change when the scenario pane has focus.
    pub field: Field,
    pub workload: Cycle<WorkloadChoice>,
    /// The verify step the workload control's first choice runs.
    pub verify: VerifyStep,
    pub allreduce: AllreduceTemplate,
    pub ranks: Cycle<RankSet>,
    pub algorithms: Cycle<AlgorithmSet>,
    pub placement: Placement,
    pub fidelity: Fidelity,
    /// Every algorithm's launch, once the launch control changed it
    /// (`None`: the scenario's, per algorithm).
    pub launch: Option<LaunchMode>,
    /// The scenario's launch, shown until the control changes it.
    pub base_launch: LaunchMode,
    /// Sizes of the latency-vs-size sweep.
    pub sweep_sizes: Vec<Bytes>,
}

impl Controls {
    /// The controls set to `base`: its workload (a transfer scenario falls
    /// back to the default verify step), ranks, algorithms, first placement
    /// and fidelity (flow unless `fidelity` or the scenario says TLP only).
    pub fn new(base: &Scenario, fidelity: Option<Fidelity>, sweep_sizes: Vec<Bytes>) -> Controls {
        // The embedded default's verify step (with its compute gap and skew).
        let default_verify = match default_scenario(None).map(|s| s.workload().clone()) {
            Ok(Workload::VerifyStep(v)) => v,
            _ => VerifyStep {
                gap: Picos::from_us(20),
                ..VerifyStep::default()
            },
        };
        let template = |dtype, repeats, gap, skew| AllreduceTemplate {
            dtype,
            // A verify step has no repeat count of its own.
            repeats: if repeats == 0 { 3 } else { repeats },
            gap,
            skew,
        };
        let (verify, allreduce, mut sizes) = match base.workload() {
            Workload::VerifyStep(v) => (*v, template(v.dtype, 0, v.gap, v.skew), vec![]),
            Workload::Allreduce {
                sizes,
                dtype,
                repeats,
                gap,
                skew,
            } => (
                default_verify,
                template(*dtype, *repeats, *gap, *skew),
                sizes.clone(),
            ),
            Workload::Transfer { .. } => (
                default_verify,
                template(Dtype::Bf16, 0, default_verify.gap, default_verify.skew),
                vec![],
            ),
        };
        let first_size = match base.workload() {
            Workload::Allreduce { .. } => sizes.first().copied(),
            _ => None,
        };
        sizes.extend(default_sweep_sizes());
        // sizes between the powers of two too (1.5 KiB, 3 KiB, …, 48 MiB),
        // and the verify step's own
        sizes.extend((10..26).map(|p| Bytes(3 << (p - 1))));
        sizes.push(verify.size());
        let sizes: BTreeSet<Bytes> = sizes.into_iter().filter(|b| b.0 > 0).collect();
        let mut choices = vec![WorkloadChoice::Verify];
        choices.extend(sizes.into_iter().map(WorkloadChoice::Allreduce));
        let start = first_size
            .and_then(|s| {
                choices
                    .iter()
                    .position(|w| *w == WorkloadChoice::Allreduce(s))
            })
            .unwrap_or(0);
        let mut workload = Cycle::new(choices);
        workload.select(start);
        let fidelity = fidelity.unwrap_or(
            if base.fidelities().contains(&Fidelity::Flow) || base.fidelities().is_empty() {
                Fidelity::Flow
            } else {
                Fidelity::Tlp
            },
        );
        Controls {
            field: Field::Workload,
            workload,
            verify,
            allreduce,
            ranks: Cycle::new(rank_sets(base.topology(), base.ranks())),
            algorithms: Cycle::new(algorithm_sets(base.algorithms())),
            placement: base
                .placements()
                .first()
                .copied()
                .unwrap_or(Placement::Peer),
            fidelity,
            launch: None,
            base_launch: base.launch(),
            sweep_sizes,
        }
    }

    /// The scenario the controls describe, built on `base`.
    pub fn scenario(&self, base: &Scenario) -> Result<Scenario, ScenarioError> {
        let mut spec = base.spec();
        spec.ranks = self
            .ranks
            .current()
            .map(|r| r.ranks.clone())
            .unwrap_or_else(|| base.ranks().to_vec());
        spec.algorithms = self
            .algorithms
            .current()
            .map(|a| a.algorithms.clone())
            .unwrap_or_else(|| Algorithm::ALL.to_vec());
        spec.placements = vec![self.placement];
        spec.fidelities = vec![self.fidelity];
        spec.workload = match self
            .workload
            .current()
            .copied()
            .unwrap_or(WorkloadChoice::Verify)
        {
            WorkloadChoice::Verify => Workload::VerifyStep(self.verify),
            WorkloadChoice::Allreduce(s) => self.allreduce.workload(vec![s]),
        };
        // the launch as the command line's --launch sets it (one rule)
        Scenario::new(spec)?.with_step(&StepOverrides {
            launch: self.launch,
            ..StepOverrides::default()
        })
    }

    /// The size sweep of the scenario the controls describe: allreduces of
    /// every sweep size at flow fidelity.
    pub fn sweep_scenario(&self, base: &Scenario) -> Result<Scenario, ScenarioError> {
        let mut spec = self.scenario(base)?.spec();
        spec.fidelities = vec![Fidelity::Flow];
        spec.workload = self.allreduce.workload(self.sweep_sizes.clone());
        Scenario::new(spec)
    }

    /// Steps one control `by` values (placement and fidelity cycle through
    /// theirs).
    pub fn change(&mut self, f: Field, by: isize) {
        match f {
            Field::Workload => self.workload.step(by),
            Field::Ranks => self.ranks.step(by),
            Field::Algorithms => self.algorithms.step(by),
            Field::Placement => {
                let all = Placement::ALL;
                let i = all.iter().position(|p| *p == self.placement).unwrap_or(0) as isize;
                self.placement = all[(i + by).rem_euclid(all.len() as isize) as usize];
            }
            Field::Fidelity => {
                self.fidelity = if self.fidelity == Fidelity::Flow {
                    Fidelity::Tlp
                } else {
                    Fidelity::Flow
                }
            }
            Field::Hidden => self.verify.hidden = step_in(&HIDDEN, self.verify.hidden, by),
            Field::Tokens => {
                self.verify.tokens =
                    (self.verify.tokens as i64 + by as i64).clamp(1, MAX_TOKENS as i64) as u64
            }
            Field::Layers => self.verify.layers = step_in(&LAYERS, self.verify.layers, by),
            Field::Launch => {
                self.launch = Some(match self.launch.unwrap_or(self.base_launch) {
                    LaunchMode::Eager => LaunchMode::Graph,
                    LaunchMode::Graph => LaunchMode::GraphEach,
                    LaunchMode::GraphEach => LaunchMode::Eager,
                })
            }
        }
    }

    /// What a control shows: `verify step 122×42 KiB`, `all 8`, `peer`, `flow`.
    pub fn value(&self, f: Field) -> String {
        match f {
            Field::Workload => match self.workload.current() {
                Some(WorkloadChoice::Allreduce(s)) => format!("allreduce {s}"),
                _ => {
                    let v = &self.verify;
                    format!("verify step {}×{}", v.allreduces(), v.size())
                }
            },
            Field::Ranks => self
                .ranks
                .current()
                .map(ToString::to_string)
                .unwrap_or_default(),
            Field::Algorithms => self
                .algorithms
                .current()
                .map(ToString::to_string)
                .unwrap_or_default(),
            Field::Placement => self.placement.name().to_string(),
            Field::Fidelity => match self.fidelity {
                Fidelity::Flow => "flow".to_string(),
                Fidelity::Tlp => "TLP (slow)".to_string(),
            },
            Field::Hidden => self.verify.hidden.to_string(),
            Field::Tokens => self.verify.tokens.to_string(),
            Field::Layers => self.verify.layers.to_string(),
            Field::Launch => self.launch.unwrap_or(self.base_launch).name().to_string(),
        }
    }
}

/// Rank sets to cycle through: the scenario's own (unless it is all GPUs),
/// all GPUs, each switch's and socket's GPUs, a pair under one parent and a
/// pair across sockets; a set with the same ranks as an earlier one is left
/// out.
pub fn rank_sets(topo: &Topology, base: &[NodeIdx]) -> Vec<RankSet> {
    let gpus = topo.gpus();
    let id = |n: NodeIdx| topo.node(n).id.0.clone();
    let set = |label: String, ranks: Vec<NodeIdx>| RankSet { label, ranks };
    let mut v: Vec<RankSet> = vec![];
    if base != gpus.as_slice() && !base.is_empty() {
        v.push(set(format!("scenario's {}", base.len()), base.to_vec()));
    }
    v.push(set(format!("all {}", gpus.len()), gpus.clone()));
    // Each switch's GPUs (in the order the switches are first met), then
    // each socket's.
    let mut switches: Vec<(NodeIdx, Vec<NodeIdx>)> = vec![];
    for &g in &gpus {
        if let Some(sw) = topo.parent_switch(g) {
            match switches.iter_mut().find(|(s, _)| *s == sw) {
                Some((_, m)) => m.push(g),
                None => switches.push((sw, vec![g])),
            }
        }
    }
    let mut groups: Vec<RankSet> = switches.into_iter().map(|(sw, m)| set(id(sw), m)).collect();
    let sockets: BTreeSet<u32> = gpus.iter().filter_map(|g| topo.socket_of(*g)).collect();
    for s in &sockets {
        let m: Vec<NodeIdx> = gpus
            .iter()
            .copied()
            .filter(|g| topo.socket_of(*g) == Some(*s))
            .collect();
        groups.push(set(format!("socket {s}"), m));
    }
    for g in groups {
        if g.ranks.len() >= 2 && g.ranks.len() < gpus.len() {
            v.push(set(format!("{} ({})", g.label, g.ranks.len()), g.ranks));
        }
    }
    if gpus.len() > 2 {
        v.push(set(
            format!("{}+{}", id(gpus[0]), id(gpus[1])),
            gpus[..2].to_vec(),
        ));
    }
    if sockets.len() >= 2 {
        let pair: Vec<NodeIdx> = sockets
            .iter()
            .filter_map(|s| {
                gpus.iter()
                    .copied()
                    .find(|g| topo.socket_of(*g) == Some(*s))
            })
            .take(2)
            .collect();
        if pair.len() == 2 {
            v.push(set(format!("{}+{}", id(pair[0]), id(pair[1])), pair));
        }
    }
    let mut seen: Vec<Vec<NodeIdx>> = vec![];
    v.retain(|s| {
        if seen.contains(&s.ranks) {
            false
        } else {
            seen.push(s.ranks.clone());
            true
        }
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use contend_topo::shipped;

    #[test]
    fn a_cycle_wraps_both_ways_and_an_empty_one_stays_put() {
        let mut c = Cycle::new(vec!['a', 'b', 'c']);
        c.step(-1);
        assert_eq!(c.current(), Some(&'c'));
        c.step(2);
        assert_eq!(c.current(), Some(&'b'));
        let mut e: Cycle<char> = Cycle::new(vec![]);
        e.step(1);
        assert_eq!((e.index(), e.current()), (0, None));
    }

    #[test]
    fn rank_sets_of_two_sockets() {
        let topo = shipped::get("pro6000-8x-2socket").unwrap().unwrap();
        let labels: Vec<String> = rank_sets(&topo, &topo.gpus())
            .iter()
            .map(|s| s.label.clone())
            .collect();
        assert_eq!(labels[0], "all 8");
        assert!(labels.contains(&"socket 0 (4)".to_string()), "{labels:?}");
        assert!(labels.contains(&"gpu0+gpu1".to_string()), "{labels:?}");
    }
}
