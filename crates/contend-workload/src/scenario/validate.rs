//! The checks every scenario passes, wherever it comes from: names resolve
//! to the right kind of node, lists hold no repeats, and every number lies
//! inside the stated [`limits`](crate::limits). One place for each rule; the
//! TOML loader maps the field an error names back to its line and column.

use super::{Pattern, ScenarioError, ScenarioSpec, Shape, Stream, Workload};
use crate::kinds::{Dtype, TransferOp};
use crate::limits::{
    MAX_BLOCKS, MAX_COLLECTIVES, MAX_GAP, MAX_ITERATIONS, MAX_REPEAT, MAX_RUN_COLLECTIVES,
    MAX_SIZE, MAX_SIZES, MAX_STREAMS, MAX_TRANSFER_OPS, launchable,
};
use crate::skew::Skew;
use contend_topo::{Bytes, Location, NodeIdx, NodeKind, Topology};
use std::fmt::Display;
use thiserror::Error;

/// A failed check: the field (a dotted path, `workload.stream[1].bytes`)
/// and what is wrong with it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
    /// The error of a scenario built in a program (no file): it names the
    /// scenario and the field.
    pub fn unlocated(self, scenario: &str) -> ScenarioError {
        ScenarioError::Invalid {
            location: Some(Location {
                file: format!("scenario `{scenario}`"),
                line: 0,
                column: 0,
                field: Some(self.field),
            }),
            message: self.message,
        }
    }
}

type Check = Result<(), FieldError>;

/// An allreduce size below one element of its element type: there is
/// nothing to reduce. (NCCL counts whole elements: it moved none and took
/// no time, so the `nccl` algorithm won every sweep that started there.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("size {size} is below one element of {dtype} = {} B", dtype.size())]
pub struct BelowOneElement {
    pub size: Bytes,
    pub dtype: Dtype,
}

/// The rule every allreduce size is held to, wherever sizes are given (a
/// scenario's `sizes` or `sweep`, `contend sweep --from/--sizes`): at
/// least one element of `dtype`; the first size below it is the error.
///
/// A size between whole elements (3 B of bf16) is allowed: contend's
/// kernels move the bytes as given (in 16-byte units, the last one cut
/// short) and NCCL, as nccl-tests does, runs `size / element` whole
/// elements; both take a time above zero. Refusing them would refuse the
/// sizes every fractional `--factor` ladder rounds to (`--factor 1.414`
/// from 1 KiB gives 5793 B).
pub fn at_least_one_element(sizes: &[Bytes], dtype: Dtype) -> Result<(), BelowOneElement> {
    match sizes.iter().find(|b| b.0 < dtype.size()) {
        Some(&size) => Err(BelowOneElement { size, dtype }),
        None => Ok(()),
    }
}

/// Every check, in file order; the first failure is returned.
pub(crate) fn check(s: &ScenarioSpec) -> Check {
    let topo = &s.topology;
    ranks(topo, &s.ranks)?;
    distinct("algorithms", &s.algorithms)?;
    distinct("placement", &s.placements)?;
    distinct("fidelity", &s.fidelities)?;
    kernel("kernel", s.kernel.blocks, s.kernel.threads)?;
    for (alg, c) in &s.per_algorithm {
        kernel(
            &format!("algorithm.{alg}.blocks"),
            c.blocks.unwrap_or(s.kernel.blocks),
            c.threads.unwrap_or(s.kernel.threads),
        )?;
    }
    match &s.workload {
        Workload::Allreduce {
            sizes,
            dtype,
            repeats,
            gap,
            skew,
        } => {
            if sizes.is_empty() || sizes.iter().any(|b| b.0 == 0) {
                return Err(FieldError::new(
                    "workload.sizes",
                    "sizes must be a non-empty list of sizes above zero",
                ));
            }
            at_least_one_element(sizes, *dtype)
                .map_err(|e| FieldError::new("workload.sizes", e.to_string()))?;
            if sizes.len() > MAX_SIZES {
                return Err(FieldError::new(
                    "workload.sizes",
                    format!("{} sizes: at most {MAX_SIZES}", sizes.len()),
                ));
            }
            if let Some(b) = sizes.iter().find(|b| **b > MAX_SIZE) {
                return Err(FieldError::new(
                    "workload.sizes",
                    format!(
                        "size {} is above the largest size contend runs ({MAX_SIZE})",
                        b.0
                    ),
                ));
            }
            count("workload.repeats", "repeats", u64::from(*repeats))?;
            // the whole run, not each size: every size runs `repeats` times
            let total = (sizes.len() as u64).saturating_mul(u64::from(*repeats));
            if total > MAX_RUN_COLLECTIVES {
                return Err(FieldError::new(
                    "workload.repeats",
                    format!(
                        "{} sizes x {repeats} repeats = {total} allreduces: at most {MAX_RUN_COLLECTIVES} in one run",
                        sizes.len()
                    ),
                ));
            }
            gap_skew(*gap, skew)
        }
        Workload::VerifyStep(v) => {
            for (f, x) in [
                ("layers", u64::from(v.layers)),
                ("allreduces_per_layer", u64::from(v.allreduces_per_layer)),
                ("hidden", v.hidden),
                ("tokens", v.tokens),
            ] {
                if x == 0 {
                    return Err(FieldError::new(
                        format!("workload.{f}"),
                        format!("{f} must be above zero"),
                    ));
                }
            }
            let total = u64::from(v.layers) * u64::from(v.allreduces_per_layer);
            if total > MAX_COLLECTIVES {
                let f = if u64::from(v.layers) > MAX_COLLECTIVES {
                    "layers"
                } else {
                    "allreduces_per_layer"
                };
                return Err(FieldError::new(
                    format!("workload.{f}"),
                    format!(
                        "{} layers x {} allreduces = {total} allreduces: at most {MAX_COLLECTIVES} in one step",
                        v.layers, v.allreduces_per_layer
                    ),
                ));
            }
            let size = v
                .hidden
                .checked_mul(v.tokens)
                .and_then(|x| x.checked_mul(v.dtype.size()));
            if size.is_none_or(|b| b > MAX_SIZE.0) {
                return Err(FieldError::new(
                    "workload.hidden",
                    format!(
                        "hidden {} x tokens {} x {} B is above the largest size contend runs ({MAX_SIZE})",
                        v.hidden,
                        v.tokens,
                        v.dtype.size()
                    ),
                ));
            }
            gap_skew(v.gap, &v.skew)
        }
        Workload::Transfer { streams, patterns } => transfer(topo, streams, patterns),
    }
}

/// A transfer workload: its streams, its patterns and the streams they
/// expand into, and the bounds on all of them together.
fn transfer(topo: &Topology, streams: &[Stream], patterns: &[Pattern]) -> Check {
    if streams.is_empty() && patterns.is_empty() {
        return Err(FieldError::new(
            "workload.stream",
            "a transfer workload needs at least one [[workload.stream]] or [[workload.pattern]]",
        ));
    }
    let mut total = streams.len() as u64;
    for (j, p) in patterns.iter().enumerate() {
        pattern(topo, j, p)?;
        total = total.saturating_add(p.shape.count());
        if total > MAX_STREAMS as u64 {
            return Err(FieldError::new(
                format!("workload.pattern[{j}]"),
                format!(
                    "the streams and patterns up to this one make {total} streams: at most {MAX_STREAMS}"
                ),
            ));
        }
    }
    if total > MAX_STREAMS as u64 {
        return Err(FieldError::new(
            "workload.stream",
            format!("{total} streams: at most {MAX_STREAMS}"),
        ));
    }
    let mut ops: u64 = 0;
    let mut add_ops = |field: &dyn Fn() -> String, s: &Stream| {
        ops = ops.saturating_add(s.ops());
        if ops > MAX_TRANSFER_OPS {
            return Err(FieldError::new(
                field(),
                format!(
                    "the streams up to this one run {ops} ops (repeat x iterations): at most {MAX_TRANSFER_OPS} in one workload"
                ),
            ));
        }
        Ok(())
    };
    for (i, st) in streams.iter().enumerate() {
        let f = |x: &str| format!("workload.stream[{i}].{x}");
        stream(topo, st, &f)?;
        add_ops(&|| f("repeat"), st)?;
    }
    for (j, p) in patterns.iter().enumerate() {
        // the fields a stream's check names, as the pattern writes them
        let (from, to) = match p.shape {
            Shape::AllToAll { .. } | Shape::Stagger { .. } => ("gpus", "gpus"),
            Shape::OneToMany { .. } => ("source", "gpus"),
            Shape::ManyToOne { .. } => ("gpus", "sink"),
            Shape::BidirectionalPairs { .. } => ("pairs", "pairs"),
        };
        let f = |x: &str| {
            let x = match x {
                "from" => from,
                "to" => to,
                x => x,
            };
            format!("workload.pattern[{j}].{x}")
        };
        for st in p.streams() {
            stream(topo, &st, &f)?;
            add_ops(&|| f("repeat"), &st)?;
        }
    }
    Ok(())
}

/// A pattern's own rules: GPUs that are GPUs, listed once; a shape that
/// yields streams; a bandwidth op.
fn pattern(topo: &Topology, j: usize, p: &Pattern) -> Check {
    let f = |x: &str| format!("workload.pattern[{j}].{x}");
    if !p.op.moves_bytes() {
        return Err(FieldError::new(
            f("op"),
            format!(
                "a pattern moves bytes: op is copy, copy-read, load or store, not `{}`",
                p.op
            ),
        ));
    }
    let gpu_list = |field: &str, gpus: &[NodeIdx], min: usize| -> Check {
        for (i, g) in gpus.iter().enumerate() {
            if !matches!(kind_of(topo, *g), Some(NodeKind::Gpu(_))) {
                return Err(FieldError::new(
                    f(field),
                    format!(
                        "`{}` is not a GPU of topology `{}`",
                        node_name(topo, *g),
                        topo.name
                    ),
                ));
            }
            if gpus[..i].contains(g) {
                return Err(FieldError::new(
                    f(field),
                    format!("`{}` is listed twice", node_name(topo, *g)),
                ));
            }
        }
        if gpus.len() < min {
            return Err(FieldError::new(
                f(field),
                format!(
                    "a `{}` pattern needs at least {min} GPUs, `{field}` has {}",
                    p.kind(),
                    gpus.len()
                ),
            ));
        }
        Ok(())
    };
    match &p.shape {
        Shape::AllToAll { gpus } => gpu_list("gpus", gpus, 2)?,
        Shape::Stagger { gpus, distance } => {
            gpu_list("gpus", gpus, 2)?;
            let n = gpus.len() as u64;
            if *distance == 0 || u64::from(*distance) >= n {
                return Err(FieldError::new(
                    f("distance"),
                    format!(
                        "distance must be 1 to {} (one less than the {n} GPUs), not {distance}",
                        n - 1
                    ),
                ));
            }
        }
        Shape::OneToMany { source, gpus } => {
            gpu_list("gpus", gpus, 1)?;
            if !matches!(kind_of(topo, *source), Some(NodeKind::Gpu(_))) {
                return Err(FieldError::new(
                    f("source"),
                    format!(
                        "`{}` is not a GPU of topology `{}`: a stream is driven by a GPU",
                        node_name(topo, *source),
                        topo.name
                    ),
                ));
            }
        }
        Shape::ManyToOne { sink, gpus } => {
            gpu_list("gpus", gpus, 1)?;
            if kind_of(topo, *sink).is_none() {
                return Err(FieldError::new(
                    f("sink"),
                    format!("node #{} is not a node of topology `{}`", sink.0, topo.name),
                ));
            }
        }
        Shape::BidirectionalPairs { pairs } => {
            if pairs.is_empty() {
                return Err(FieldError::new(f("pairs"), "`pairs` is an empty list"));
            }
            for (i, &(a, b)) in pairs.iter().enumerate() {
                for g in [a, b] {
                    if !matches!(kind_of(topo, g), Some(NodeKind::Gpu(_))) {
                        return Err(FieldError::new(
                            f("pairs"),
                            format!(
                                "`{}` is not a GPU of topology `{}`: both ends of a pair drive a stream",
                                node_name(topo, g),
                                topo.name
                            ),
                        ));
                    }
                }
                if pairs[..i]
                    .iter()
                    .any(|&(c, d)| (c, d) == (a, b) || (c, d) == (b, a))
                {
                    return Err(FieldError::new(
                        f("pairs"),
                        format!(
                            "the pair `{}`, `{}` is listed twice",
                            node_name(topo, a),
                            node_name(topo, b)
                        ),
                    ));
                }
            }
        }
    }
    if p.shape.count() == 0 {
        return Err(FieldError::new(
            f("gpus"),
            format!("this `{}` pattern expands to no streams", p.kind()),
        ));
    }
    if let Some(name) = &p.name
        && (name.is_empty() || name.len() > 200)
    {
        return Err(FieldError::new(
            f("name"),
            "a pattern's name is 1 to 200 characters",
        ));
    }
    Ok(())
}

fn node_name(topo: &Topology, n: NodeIdx) -> String {
    topo.nodes()
        .get(n.0 as usize)
        .map_or_else(|| format!("node #{}", n.0), |x| x.id.0.clone())
}

fn kind_of(topo: &Topology, n: NodeIdx) -> Option<&NodeKind> {
    topo.nodes().get(n.0 as usize).map(|x| &x.kind)
}

fn ranks(topo: &Topology, ranks: &[NodeIdx]) -> Check {
    if ranks.is_empty() {
        return Err(FieldError::new("ranks", "`ranks` is an empty list"));
    }
    for (i, r) in ranks.iter().enumerate() {
        if !matches!(kind_of(topo, *r), Some(NodeKind::Gpu(_))) {
            return Err(FieldError::new(
                "ranks",
                format!(
                    "`{}` is not a GPU of topology `{}`",
                    node_name(topo, *r),
                    topo.name
                ),
            ));
        }
        if ranks[..i].contains(r) {
            return Err(FieldError::new(
                "ranks",
                format!("`{}` is listed twice", node_name(topo, *r)),
            ));
        }
    }
    Ok(())
}

fn distinct<T: PartialEq + Display>(field: &str, v: &[T]) -> Check {
    if v.is_empty() {
        return Err(FieldError::new(
            field,
            format!("`{field}` is an empty list"),
        ));
    }
    for (i, x) in v.iter().enumerate() {
        if v[..i].contains(x) {
            return Err(FieldError::new(field, format!("`{x}` is listed twice")));
        }
    }
    Ok(())
}

fn kernel(field: &str, blocks: u32, threads: u32) -> Check {
    if !launchable(blocks, threads) {
        return Err(FieldError::new(
            field,
            format!(
                "blocks must be 1 to {MAX_BLOCKS} and threads a multiple of 32 from 32 to 1024 (got {blocks} x {threads})"
            ),
        ));
    }
    Ok(())
}

fn count(field: &str, what: &str, n: u64) -> Check {
    if n == 0 {
        return Err(FieldError::new(field, format!("{what} must be 1 or more")));
    }
    if n > MAX_COLLECTIVES {
        return Err(FieldError::new(
            field,
            format!("{what} = {n}: at most {MAX_COLLECTIVES}"),
        ));
    }
    Ok(())
}

fn gap_skew(gap: contend_topo::Picos, skew: &Skew) -> Check {
    if gap > MAX_GAP {
        return Err(FieldError::new(
            "workload.gap_us",
            format!(
                "a compute gap of {} us is above the limit of {} us",
                gap.as_us_f64(),
                MAX_GAP.as_us_f64()
            ),
        ));
    }
    skew.validate()
        .map_err(|e| FieldError::new("workload.skew", e.to_string()))?;
    let p = match *skew {
        Skew::None => 0.0,
        Skew::Normal { sd_us } => sd_us,
        Skew::Exponential { mean_us } => mean_us,
        Skew::Uniform { max_us } => max_us,
    };
    if p > MAX_GAP.as_us_f64() {
        return Err(FieldError::new(
            "workload.skew",
            format!(
                "skew parameter {p} us is above the limit of {} us",
                MAX_GAP.as_us_f64()
            ),
        ));
    }
    Ok(())
}

/// One stream's rules; `f` names a field as the file writes it (a stream's
/// own, or the pattern's it came from).
fn stream(topo: &Topology, s: &Stream, f: &dyn Fn(&str) -> String) -> Check {
    for (name, n) in [("from", s.from), ("to", s.to)] {
        match kind_of(topo, n) {
            None => {
                return Err(FieldError::new(
                    f(name),
                    format!("node #{} is not a node of topology `{}`", n.0, topo.name),
                ));
            }
            Some(k) if !k.is_endpoint() => {
                return Err(FieldError::new(
                    f(name),
                    format!(
                        "`{}` is a {}; streams run between GPUs and host memory",
                        node_name(topo, n),
                        k.name()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    if !matches!(kind_of(topo, s.from), Some(NodeKind::Gpu(_))) {
        return Err(FieldError::new(f("from"), "a stream is driven by a GPU"));
    }
    if s.from == s.to {
        return Err(FieldError::new(
            f("to"),
            "a stream needs two different endpoints",
        ));
    }
    if s.bytes.0 == 0 || s.bytes > MAX_SIZE {
        return Err(FieldError::new(
            f("bytes"),
            format!(
                "bytes must be 1 to {} ({MAX_SIZE}), not {}",
                MAX_SIZE.0, s.bytes.0
            ),
        ));
    }
    kernel(&f("blocks"), s.kernel.blocks, s.kernel.threads)?;
    if s.iterations == 0 || s.iterations > MAX_ITERATIONS {
        return Err(FieldError::new(
            f("iterations"),
            format!(
                "iterations must be 1 to {MAX_ITERATIONS}, not {}",
                s.iterations
            ),
        ));
    }
    if s.fence && s.op != TransferOp::PingPong {
        return Err(FieldError::new(
            f("fence"),
            "`fence` applies to ping-pong streams only",
        ));
    }
    if s.host_flags {
        if s.op != TransferOp::PingPong || !matches!(kind_of(topo, s.to), Some(NodeKind::Gpu(_))) {
            return Err(FieldError::new(
                f("host_flags"),
                "`host_flags` applies to ping-pong streams between two GPUs only",
            ));
        }
        if topo.nearest_host_memory(s.from).is_none() {
            return Err(FieldError::new(
                f("host_flags"),
                format!(
                    "`host_flags`: topology `{}` has no host memory for `{}`'s flags",
                    topo.name,
                    node_name(topo, s.from)
                ),
            ));
        }
    }
    if s.repeat == 0 || s.repeat > MAX_REPEAT {
        return Err(FieldError::new(
            f("repeat"),
            format!("repeat must be 1 to {MAX_REPEAT}, not {}", s.repeat),
        ));
    }
    if s.start > MAX_GAP {
        return Err(FieldError::new(
            f("start_us"),
            format!(
                "a start offset of {} us is above the limit of {} us",
                s.start.as_us_f64(),
                MAX_GAP.as_us_f64()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_scenario;

    #[test]
    fn sizes_below_one_element_are_refused_and_between_elements_kept() {
        let b = |v: &[u64]| v.iter().map(|&x| Bytes(x)).collect::<Vec<_>>();
        assert_eq!(
            at_least_one_element(&b(&[4096, 1, 0]), Dtype::Bf16),
            Err(BelowOneElement {
                size: Bytes(1),
                dtype: Dtype::Bf16
            })
        );
        assert_eq!(
            at_least_one_element(&b(&[2]), Dtype::Fp32)
                .unwrap_err()
                .to_string(),
            "size 2 B is below one element of fp32 = 4 B"
        );
        // one element, and sizes between whole elements, are allreduces
        assert!(at_least_one_element(&b(&[2, 3, 5793]), Dtype::Bf16).is_ok());
        assert!(at_least_one_element(&b(&[4, 6]), Dtype::Fp32).is_ok());
    }

    fn scenario(workload: &str) -> String {
        format!(
            "name = \"s\"\ntopology = \"pro6000-8x-2socket\"\nalgorithms = [\"nccl\"]\n\n[workload]\nkind = \"allreduce\"\n{workload}\n"
        )
    }

    #[test]
    fn a_scenario_size_below_one_element_is_located_at_its_field() {
        let text = scenario("sizes = [\"4 KiB\", \"2 B\"]\ndtype = \"fp32\"");
        let e = parse_scenario("s.toml", &text, None, None).unwrap_err();
        assert_eq!(e.field(), Some("workload.sizes"));
        assert_eq!(
            e.to_string(),
            "s.toml:7:9 (field `workload.sizes`): size 2 B is below one element of fp32 = 4 B"
        );
        let text = scenario("sweep = { from = 1, to = \"1 KiB\" }");
        let e = parse_scenario("s.toml", &text, None, None).unwrap_err();
        assert_eq!(e.field(), Some("workload.sweep.from"));
        assert!(
            e.to_string()
                .starts_with("s.toml:7:18 (field `workload.sweep.from`): size 1 B is below"),
            "{e}"
        );
        // a scenario built in a program is held to the same rule
        let ok = parse_scenario("s.toml", &scenario("sizes = [3]"), None, None).unwrap();
        let Workload::Allreduce {
            dtype,
            repeats,
            gap,
            skew,
            ..
        } = ok.workload().clone()
        else {
            panic!()
        };
        let e = ok
            .with_workload(Workload::Allreduce {
                sizes: vec![Bytes(1)],
                dtype,
                repeats,
                gap,
                skew,
            })
            .unwrap_err();
        assert_eq!(e.field(), Some("workload.sizes"));
        assert!(
            e.to_string().contains("below one element of bf16 = 2 B"),
            "{e}"
        );
    }
}
