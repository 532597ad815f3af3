//! The transfer workload's TOML: its streams (op, source, destination,
//! size, start) and patterns of streams (all-to-all, staggered and the
//! rest), each field checked where it is read and reported at its span.

use super::*;

pub(super) fn parse_stream(
    cx: &mut Cx,
    i: usize,
    s: &Spanned<RawStream>,
    topo: &Topology,
    kernel: KernelConfig,
) -> Result<Stream, ScenarioError> {
    let sr = s.get_ref();
    let f = |x: &str| format!("workload.stream[{i}].{x}");
    cx.note(&format!("workload.stream[{i}]"), s);
    cx.note(&f("from"), &sr.from);
    cx.note(&f("to"), &sr.to);
    cx.note_opt(&f("bytes"), &sr.bytes);
    cx.note_opt(&f("blocks"), &sr.blocks);
    cx.note_opt(&f("threads"), &sr.threads);
    cx.note_opt(&f("iterations"), &sr.iterations);
    cx.note_opt(&f("repeat"), &sr.repeat);
    cx.note_opt(&f("start_us"), &sr.start_us);
    let start = start_offset(cx, &sr.start_us, &f("start_us"))?;
    let node = |n: &Spanned<String>, field: &str| -> Result<NodeIdx, ScenarioError> {
        topo.lookup(n.get_ref()).ok_or_else(|| {
            cx.err(
                n,
                field,
                format!(
                    "`{}` is not a node of topology `{}`",
                    n.get_ref(),
                    topo.name
                ),
            )
        })
    };
    let from = node(&sr.from, &f("from"))?;
    let to = node(&sr.to, &f("to"))?;
    let op = TransferOp::from_str(sr.op.get_ref()).map_err(|_| {
        cx.err(
            &sr.op,
            &f("op"),
            format!("unknown op `{}` ({})", sr.op.get_ref(), op_names()),
        )
    })?;
    if let Some(fence) = &sr.fence
        && op != TransferOp::PingPong
    {
        return Err(cx.err(
            fence,
            &f("fence"),
            "`fence` applies to ping-pong streams only",
        ));
    }
    let default_bytes = if op == TransferOp::PingPong {
        8
    } else {
        64 << 20
    };
    Ok(Stream {
        from,
        to,
        op,
        bytes: sr
            .bytes
            .as_ref()
            .map_or(Bytes(default_bytes), |b| *b.get_ref()),
        kernel: KernelConfig {
            blocks: sr.blocks.as_ref().map_or(kernel.blocks, |b| *b.get_ref()),
            threads: sr.threads.as_ref().map_or(kernel.threads, |t| *t.get_ref()),
        },
        iterations: sr.iterations.as_ref().map_or(100, |n| *n.get_ref()),
        fence: sr.fence.as_ref().is_some_and(|f| *f.get_ref()),
        host_flags: sr.host_flags.as_ref().is_some_and(|f| *f.get_ref()),
        start,
        repeat: sr.repeat.as_ref().map_or(1, |n| *n.get_ref()),
    })
}

fn op_names() -> String {
    TransferOp::ALL
        .iter()
        .map(|o| o.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `start_us`: zero or more microseconds (bounded by the checks).
fn start_offset(cx: &Cx, v: &Option<Spanned<f64>>, field: &str) -> Result<Picos, ScenarioError> {
    match v {
        None => Ok(Picos::ZERO),
        // saturates far above the limit the checks hold it to
        Some(g) if g.get_ref().is_finite() && *g.get_ref() >= 0.0 => {
            Ok(Picos::from_ns_f64(g.get_ref() * 1000.0))
        }
        Some(g) => Err(cx.err(g, field, "must be zero or more microseconds")),
    }
}

/// A GPU list: `"all"` (every GPU of the topology, in its order) or GPU ids.
fn parse_gpus(
    cx: &mut Cx,
    v: &Option<OneOrMany>,
    field: &str,
    topo: &Topology,
) -> Result<Vec<NodeIdx>, ScenarioError> {
    let Some(v) = v else {
        return Ok(topo.gpus());
    };
    cx.note(field, v);
    if let toml::Value::String(s) = v.get_ref() {
        if s == "all" {
            return Ok(topo.gpus());
        }
        return Err(cx.err(
            v,
            field,
            format!("`{field}` is \"all\" or a list of GPU ids"),
        ));
    }
    let mut out = vec![];
    for s in &strings(cx, v, field)? {
        let idx = topo.lookup(s.get_ref()).ok_or_else(|| {
            cx.err(
                s,
                field,
                format!(
                    "`{}` is not a node of topology `{}`",
                    s.get_ref(),
                    topo.name
                ),
            )
        })?;
        out.push(idx);
    }
    Ok(out)
}

pub(super) fn parse_pattern(
    cx: &mut Cx,
    j: usize,
    p: &Spanned<RawPattern>,
    topo: &Topology,
    kernel: KernelConfig,
) -> Result<Pattern, ScenarioError> {
    let r = p.get_ref();
    let f = |x: &str| format!("workload.pattern[{j}].{x}");
    cx.note(&format!("workload.pattern[{j}]"), p);
    cx.note(&f("kind"), &r.kind);
    cx.note(&f("op"), &r.op);
    for (name, v) in [
        ("bytes", r.bytes.as_ref().map(|s| s.span())),
        ("blocks", r.blocks.as_ref().map(|s| s.span())),
        ("threads", r.threads.as_ref().map(|s| s.span())),
        ("repeat", r.repeat.as_ref().map(|s| s.span())),
        ("start_us", r.start_us.as_ref().map(|s| s.span())),
        ("distance", r.distance.as_ref().map(|s| s.span())),
        ("source", r.source.as_ref().map(|s| s.span())),
        ("sink", r.sink.as_ref().map(|s| s.span())),
        ("pairs", r.pairs.as_ref().map(|s| s.span())),
        ("name", r.name.as_ref().map(|s| s.span())),
    ] {
        if let Some(span) = v {
            cx.spans.insert(f(name), span);
        }
    }
    let kind =
        PatternKind::from_str(r.kind.get_ref()).map_err(|e| cx.err(&r.kind, &f("kind"), e))?;
    // fields that do not apply to this kind
    let present = [
        ("gpus", r.gpus.as_ref().map(|s| s.span())),
        ("distance", r.distance.as_ref().map(|s| s.span())),
        ("source", r.source.as_ref().map(|s| s.span())),
        ("sink", r.sink.as_ref().map(|s| s.span())),
        ("pairs", r.pairs.as_ref().map(|s| s.span())),
    ];
    let allowed: &[&str] = match kind {
        PatternKind::AllToAll => &["gpus"],
        PatternKind::Stagger => &["gpus", "distance"],
        PatternKind::OneToMany => &["gpus", "source"],
        PatternKind::ManyToOne => &["gpus", "sink"],
        PatternKind::BidirectionalPairs => &["pairs"],
    };
    for (name, span) in present {
        if let Some(span) = span
            && !allowed.contains(&name)
        {
            return Err(ScenarioError::Invalid {
                location: Some(cx.at(span.start, &f(name))),
                message: format!("`{name}` does not apply to a `{kind}` pattern"),
            });
        }
    }
    let need = |what: &str| cx.err(p, &f(what), format!("a `{kind}` pattern needs `{what}`"));
    let node = |n: &Spanned<String>, field: &str| -> Result<NodeIdx, ScenarioError> {
        topo.lookup(n.get_ref()).ok_or_else(|| {
            cx.err(
                n,
                field,
                format!(
                    "`{}` is not a node of topology `{}`",
                    n.get_ref(),
                    topo.name
                ),
            )
        })
    };
    let shape = match kind {
        PatternKind::AllToAll => Shape::AllToAll {
            gpus: parse_gpus(cx, &r.gpus, &f("gpus"), topo)?,
        },
        PatternKind::Stagger => {
            let distance = *r
                .distance
                .as_ref()
                .ok_or_else(|| need("distance"))?
                .get_ref();
            Shape::Stagger {
                gpus: parse_gpus(cx, &r.gpus, &f("gpus"), topo)?,
                distance,
            }
        }
        PatternKind::OneToMany => {
            let source = node(
                r.source.as_ref().ok_or_else(|| need("source"))?,
                &f("source"),
            )?;
            Shape::OneToMany {
                source,
                gpus: parse_gpus(cx, &r.gpus, &f("gpus"), topo)?,
            }
        }
        PatternKind::ManyToOne => {
            let sink = node(r.sink.as_ref().ok_or_else(|| need("sink"))?, &f("sink"))?;
            Shape::ManyToOne {
                sink,
                gpus: parse_gpus(cx, &r.gpus, &f("gpus"), topo)?,
            }
        }
        PatternKind::BidirectionalPairs => {
            let list = r.pairs.as_ref().ok_or_else(|| need("pairs"))?;
            let mut pairs = vec![];
            for pair in list.get_ref() {
                let [a, b] = pair.get_ref().as_slice() else {
                    return Err(cx.err(
                        pair,
                        &f("pairs"),
                        "each pair is two GPU ids: [\"gpu0\", \"gpu1\"]",
                    ));
                };
                pairs.push((node(a, &f("pairs"))?, node(b, &f("pairs"))?));
            }
            Shape::BidirectionalPairs { pairs }
        }
    };
    let op = TransferOp::from_str(r.op.get_ref()).map_err(|_| {
        cx.err(
            &r.op,
            &f("op"),
            format!("unknown op `{}` ({})", r.op.get_ref(), op_names()),
        )
    })?;
    let start = start_offset(cx, &r.start_us, &f("start_us"))?;
    Ok(Pattern {
        shape,
        name: r.name.as_ref().map(|n| n.get_ref().clone()),
        op,
        bytes: r.bytes.as_ref().map_or(Bytes(64 << 20), |b| *b.get_ref()),
        kernel: KernelConfig {
            blocks: r.blocks.as_ref().map_or(kernel.blocks, |b| *b.get_ref()),
            threads: r.threads.as_ref().map_or(kernel.threads, |t| *t.get_ref()),
        },
        repeat: r.repeat.as_ref().map_or(1, |n| *n.get_ref()),
        start,
    })
}
