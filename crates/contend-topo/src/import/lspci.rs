//! lspci's views of the PCIe tree (pciutils `ls-tree.c`, `ls-caps.c`):
//! - `lspci -t` / `-tv`: the tree as drawn, `-[dddd:bb]-` for a host bridge,
//!   `dd.f-[sec-sub]--` for a bridge and its buses, `+-`/`\-` for siblings
//!   under the `|` of their bus; `-tv` adds each device's name;
//! - `lspci -vv` (and `-vvv`, `-nn`, plain `lspci`): one block per function
//!   from `bb:dd.f class: name`, with `NUMA node`, the Express port type,
//!   `LnkCap`/`LnkSta` (speed and width; an idle GPU trains down and lspci
//!   says `(downgraded)`), `DevCtl`'s `MaxPayload`/`MaxReadReq`, 10-bit tags
//!   (`DevCap2` can, `DevCtl2` enabled) and `ACSCtl` (request redirect sends
//!   peer traffic up to the root complex).

use super::pci::{Bdf, gen_of_speed, model_of_device_id};
use super::{At, DevKind, Facts, Port, Up, Warning, located, merge};
use crate::error::TopoError;
use std::collections::{BTreeMap, BTreeSet};

/// Which bus a column of the drawing hangs devices on.
#[derive(Clone, Copy, Debug)]
struct Bus {
    domain: u16,
    number: u8,
    owner: Up,
}

fn hex2(s: &[u8]) -> Option<u8> {
    std::str::from_utf8(s)
        .ok()
        .and_then(|x| u8::from_str_radix(x, 16).ok())
}

/// `dd.f` at byte `p`.
fn device_at(b: &[u8], p: usize) -> Option<(u8, u8)> {
    if p + 4 > b.len() || b[p + 2] != b'.' {
        return None;
    }
    let dev = hex2(&b[p..p + 2]).filter(|d| *d < 32)?;
    let func = (b[p + 3] as char).to_digit(8)? as u8;
    // followed by the end, a name, or a bridge's range
    match b.get(p + 4) {
        None | Some(b' ') | Some(b'-') => Some((dev, func)),
        _ => None,
    }
}

/// `[dddd:bb]`, `[bb]` or `[bb-cc]` at byte `p` (the `[`): (domain, first bus, end).
fn bracket_at(b: &[u8], p: usize) -> Option<(Option<u16>, u8, usize)> {
    let close = p + b[p..].iter().position(|c| *c == b']')?;
    let inner = std::str::from_utf8(&b[p + 1..close]).ok()?;
    if let Some((d, bus)) = inner.split_once(':') {
        let domain = u16::from_str_radix(d, 16).ok()?;
        return Some((Some(domain), u8::from_str_radix(bus, 16).ok()?, close));
    }
    let first = inner.split('-').next()?;
    (first.len() == 2).then_some(())?;
    Some((None, u8::from_str_radix(first, 16).ok()?, close))
}

/// Whether a line starts a drawn tree (its first host bridge).
fn starts_tree(line: &str) -> bool {
    let t = line.trim();
    (t.starts_with("-[") || t.starts_with("-+-[")) && t.contains(']')
}

/// A class as lspci names it, without `-nn`'s code (`3D controller [0302]`).
fn class_name(class: &str) -> &str {
    match class.rsplit_once(" [") {
        Some((c, code)) if code.ends_with(']') => c.trim(),
        _ => class.trim(),
    }
}

/// Whether a line is part of a drawn tree.
fn tree_line(t: &str) -> bool {
    let s = t.trim_start();
    s.starts_with("-[")
        || s.starts_with("-+-[")
        || s.starts_with("+-[")
        || s.starts_with("\\-[")
        || s.starts_with("| ")
        || s.starts_with('|') && s.len() == 1
        || (s.starts_with("+-") || s.starts_with("\\-")) && s.as_bytes().get(4) == Some(&b'.')
}

/// One drawn tree, from line `start`; returns the line after it.
fn parse_tree(
    file: &str,
    lines: &[&str],
    start: usize,
    facts: &mut Facts,
    gpus: &mut BTreeSet<Bdf>,
    hosts: &mut BTreeSet<(u16, u8)>,
    named: &mut bool,
) -> Result<usize, TopoError> {
    let mut anchors: BTreeMap<usize, Bus> = BTreeMap::new();
    // the line (1-based) each device is drawn on: lspci draws one once
    let mut drawn: BTreeMap<Bdf, usize> = BTreeMap::new();
    let mut i = start;
    while i < lines.len() && tree_line(lines[i]) {
        let line = lines[i];
        // a second tree right below the first (`lspci -t` then `-tv`)
        if i > start && starts_tree(line) {
            break;
        }
        // the drawing ends where a name starts (two spaces after a device)
        let b = line.as_bytes();
        let mut pending: Option<Bus> = None;
        let mut last_dev: Option<Bdf> = None;
        let mut p = 0;
        while p < b.len() {
            let c = b[p];
            if c == b'[' {
                let Some((domain, number, close)) = bracket_at(b, p) else {
                    return Err(located(
                        file,
                        i + 1,
                        format!("column {}: a bus range lspci -t does not draw", p + 1),
                    ));
                };
                match (last_dev, domain) {
                    (Some(dev), _) if p > 0 && b[p - 1] == b'-' && domain.is_none() => {
                        pending = Some(Bus {
                            domain: dev.domain,
                            number,
                            owner: Up::Bridge(dev),
                        });
                        let d = facts.device(dev, file);
                        d.kind = Some(DevKind::Bridge);
                    }
                    _ => {
                        let domain = domain.unwrap_or(0);
                        hosts.insert((domain, number));
                        pending = Some(Bus {
                            domain,
                            number,
                            owner: Up::Host(domain, number),
                        });
                    }
                }
                p = close + 1;
                continue;
            }
            if p >= 2
                && b[p - 1] == b'-'
                && matches!(b[p - 2], b'+' | b'\\' | b'-')
                && let Some((dev, func)) = device_at(b, p)
            {
                let anchor = p - 2;
                let bus = match pending.take() {
                    Some(bus) => bus,
                    None => *anchors.get(&anchor).ok_or_else(|| {
                        located(
                            file,
                            i + 1,
                            format!(
                                "column {}: device {} has no bus above it in the drawing (is the tree cut or re-indented?)",
                                p + 1,
                                String::from_utf8_lossy(&b[p..p + 4])
                            ),
                        )
                    })?,
                };
                anchors.retain(|col, _| *col <= anchor);
                anchors.insert(anchor, bus);
                let bdf = Bdf {
                    domain: bus.domain,
                    bus: bus.number,
                    dev,
                    func,
                };
                if let Some(first) = drawn.insert(bdf, i + 1) {
                    return Err(located(
                        file,
                        i + 1,
                        format!(
                            "lspci -t draws device {bdf} twice (lines {first} and {}): two bridges claim bus {:02x} (is the tree edited, or two machines' trees spliced?)",
                            i + 1,
                            bdf.bus
                        ),
                    ));
                }
                let d = facts.device(bdf, file);
                match d.up {
                    None => {
                        d.up = Some(bus.owner);
                        d.up_at = Some(At::new(file, i + 1));
                    }
                    Some(old) if old != bus.owner => {
                        let first = d
                            .up_at
                            .as_ref()
                            .map(|a| a.to_string())
                            .unwrap_or_else(|| "another input".into());
                        return Err(located(
                            file,
                            i + 1,
                            format!(
                                "lspci -t draws device {bdf} under {} here, under {old} at {first}: one device has one parent (are the inputs of two machines?)",
                                bus.owner,
                            ),
                        ));
                    }
                    Some(_) => {}
                }
                last_dev = Some(bdf);
                p += 4;
                // a name: the rest of the line after the spaces
                if b.get(p) == Some(&b' ') {
                    let name = line[p..].trim();
                    let name = name.split("  #").next().unwrap_or(name).trim();
                    if !name.is_empty() {
                        *named = true;
                        let d = facts.device(bdf, file);
                        if d.name.is_none() {
                            d.name = Some(name.to_string());
                        }
                        classify(d);
                        if d.kind == Some(DevKind::Gpu) {
                            gpus.insert(bdf);
                        }
                    }
                    break;
                }
                continue;
            }
            p += 1;
        }
        i += 1;
    }
    Ok(i)
}

/// A device's kind from its name (lspci's vendor and device strings).
fn classify(d: &mut super::Device) {
    if d.kind == Some(DevKind::Bridge) {
        return;
    }
    let Some(name) = d.name.as_deref() else {
        return;
    };
    let nvidia = name.contains("NVIDIA");
    let not_gpu = [
        "Audio", "USB", "Serial", "UCSI", "NVSwitch", "bridge", "Bridge",
    ]
    .iter()
    .any(|w| name.contains(w));
    if let Some(id) = name
        .split("Device ")
        .nth(1)
        .and_then(|x| x.split_whitespace().next())
        .and_then(|x| u16::from_str_radix(x, 16).ok())
        .filter(|_| nvidia)
    {
        d.device_id.get_or_insert(id);
    }
    d.kind = Some(if nvidia && !not_gpu {
        DevKind::Gpu
    } else {
        DevKind::Other
    });
}

/// `bb:dd.f class: name` (with an optional domain), the start of a block.
fn block_header(t: &str) -> Option<(Bdf, String, String)> {
    let (addr, rest) = t.split_once(' ')?;
    if !addr.contains('.') || addr.len() < 7 {
        return None;
    }
    let bdf = Bdf::parse(addr)?;
    let (class, name) = rest.split_once(": ")?;
    Some((bdf, class.trim().to_string(), name.trim().to_string()))
}

fn link(v: &str) -> Option<(u8, u8, bool)> {
    let speed = v.split("Speed ").nth(1)?;
    let g = gen_of_speed(speed)?;
    let down = speed
        .split(',')
        .next()
        .is_some_and(|s| s.contains("downgraded"));
    let w = v
        .split("Width x")
        .nth(1)?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .ok()?;
    Some((g, w, down))
}

fn bytes_after(t: &str, key: &str) -> Option<u64> {
    t.split(key).nth(1)?.split_whitespace().next()?.parse().ok()
}

pub(crate) fn scan(
    file: &str,
    lines: &[&str],
    facts: &mut Facts,
    found: &mut Vec<String>,
) -> Result<(), TopoError> {
    let mut gpus = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    let mut named = false;
    let mut trees = 0;
    let mut blocks: BTreeSet<Bdf> = BTreeSet::new();
    // each block's first line and class
    let mut block_class: BTreeMap<Bdf, (usize, String)> = BTreeMap::new();
    let mut block_gpus: BTreeSet<Bdf> = BTreeSet::new();
    let mut linked = 0;
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if starts_tree(t) {
            i = parse_tree(file, lines, i, facts, &mut gpus, &mut hosts, &mut named)?;
            trees += 1;
            continue;
        }
        let Some((bdf, class, name)) = block_header(t) else {
            i += 1;
            continue;
        };
        // a block per function: the same address heading a block of another
        // class is two devices on one bus ID
        match block_class.get(&bdf) {
            Some((first, c)) if c != class_name(&class) => {
                return Err(located(
                    file,
                    i + 1,
                    format!(
                        "lspci lists device {bdf} as a {} here and as a {c} (line {first}): one bus ID names one device (are the inputs of two machines?)",
                        class_name(&class)
                    ),
                ));
            }
            Some(_) => {}
            None => {
                block_class.insert(bdf, (i + 1, class_name(&class).to_string()));
            }
        }
        blocks.insert(bdf);
        let is_gpu = name.contains("NVIDIA")
            && (class.starts_with("VGA compatible controller")
                || class.starts_with("3D controller"));
        let is_bridge = class.starts_with("PCI bridge");
        let id = name
            .rsplit("[10de:")
            .next()
            .filter(|_| name.contains("[10de:"))
            .and_then(|x| u16::from_str_radix(x.get(..4)?, 16).ok());
        {
            let d = facts.device(bdf, file);
            if d.name.is_none() || d.name.as_deref().is_some_and(|n| n.contains("Device ")) {
                d.name = Some(name.clone());
            }
            if is_gpu {
                d.kind = Some(DevKind::Gpu);
            } else if is_bridge {
                d.kind = Some(DevKind::Bridge);
            } else if d.kind.is_none() {
                d.kind = Some(DevKind::Other);
            }
            if let Some(id) = id {
                d.device_id = Some(id);
            }
        }
        if is_gpu {
            block_gpus.insert(bdf);
        }
        let mut j = i + 1;
        let mut reg = "";
        let mut tags_cap = None;
        let mut tags_ctl = None;
        while j < lines.len() {
            let raw = lines[j];
            let b = raw.trim();
            if b.is_empty() || block_header(b).is_some() {
                break;
            }
            if !raw.starts_with([' ', '\t']) && !b.contains(':') {
                break;
            }
            for r in [
                "DevCap2:", "DevCtl2:", "DevCap:", "DevCtl:", "LnkCap:", "LnkSta:", "LnkCtl:",
            ] {
                if b.starts_with(r) {
                    reg = r;
                }
            }
            if b.starts_with("Capabilities:") {
                reg = "";
            }
            let mut notes: Vec<Warning> = Vec::new();
            let d = facts.device(bdf, file);
            if let Some(n) = b
                .strip_prefix("NUMA node:")
                .and_then(|v| v.trim().parse().ok())
            {
                merge(
                    &mut d.numa,
                    n,
                    || format!("device {bdf} NUMA node"),
                    &mut notes,
                );
            }
            if b.starts_with("Capabilities:") && b.contains("Express") {
                let port = if b.contains("Root Port") {
                    Some(Port::Root)
                } else if b.contains("Upstream Port") {
                    Some(Port::Upstream)
                } else if b.contains("Downstream Port") {
                    Some(Port::Downstream)
                } else if b.contains("Endpoint") {
                    Some(Port::Endpoint)
                } else {
                    None
                };
                if let Some(p) = port {
                    d.port = Some(p);
                }
            }
            if let Some(v) = b.strip_prefix("LnkCap:") {
                match link(v) {
                    Some((g, w, _)) => d.cap = Some((g, w)),
                    None => notes.push(Warning {
                        field: format!("device {bdf} LnkCap"),
                        message: format!("`{}` names no speed and width lspci writes", v.trim()),
                    }),
                }
                linked += 1;
            }
            if let Some(v) = b.strip_prefix("LnkSta:")
                && let Some(l) = link(v)
            {
                d.sta = Some(l);
            }
            if b.contains("MaxPayload") && b.contains("MaxReadReq") {
                d.mps = bytes_after(b, "MaxPayload ");
                d.mrrs = bytes_after(b, "MaxReadReq ");
            }
            if b.contains("10BitTagReq") {
                let on = b.contains("10BitTagReq+");
                match reg {
                    "DevCtl2:" => tags_ctl = Some(on),
                    "DevCap2:" => tags_cap = Some(on),
                    _ => {}
                }
            }
            if let Some(v) = b.strip_prefix("ACSCtl:") {
                d.acs_redirect = Some(v.contains("ReqRedir+") || v.contains("CmpltRedir+"));
            }
            facts.warnings.extend(notes);
            j += 1;
        }
        let tags = match (tags_cap, tags_ctl) {
            (_, Some(ctl)) => Some(ctl),
            (Some(cap), None) => Some(cap),
            _ => None,
        };
        if let Some(t) = tags {
            facts.device(bdf, file).tags_10bit = Some(t);
        }
        i = j;
    }
    if trees > 0 {
        let n = hosts.len();
        found.push(if named {
            format!(
                "lspci -tv ({} GPUs under {n} host bridge{})",
                gpus.len(),
                if n == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "lspci -t ({n} host bridge{}; no device names: GPUs by bus ID from the other inputs)",
                if n == 1 { "" } else { "s" }
            )
        });
    }
    if !blocks.is_empty() {
        let what = if linked > 0 { "lspci -vv" } else { "lspci" };
        found.push(format!(
            "{what} ({} device{}, {} GPU{}{})",
            blocks.len(),
            if blocks.len() == 1 { "" } else { "s" },
            block_gpus.len(),
            if block_gpus.len() == 1 { "" } else { "s" },
            if linked > 0 {
                format!(", {linked} with LnkCap")
            } else {
                String::new()
            }
        ));
    }
    for bdf in gpus.iter().chain(&block_gpus) {
        let d = facts.devices.get_mut(bdf).expect("scanned");
        if d.device_id.is_none()
            && let Some(n) = &d.name
            && let Some(id) = n
                .split("Device ")
                .nth(1)
                .and_then(|x| u16::from_str_radix(x.get(..4)?, 16).ok())
        {
            d.device_id = Some(id);
        }
        if let (Some(id), Some(n)) = (d.device_id, &d.name)
            && n.contains("Device ")
            && let Some(m) = model_of_device_id(id)
        {
            d.name = Some(format!("NVIDIA Corporation [{m}]"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Facts {
        let lines: Vec<&str> = text.lines().collect();
        let mut f = Facts::default();
        let mut found = vec![];
        scan("t.txt", &lines, &mut f, &mut found).unwrap();
        f
    }

    #[test]
    fn the_drawing_gives_parents() {
        let f = tree(
            "-+-[0000:00]-+-00.0  Host\n |           +-01.1-[01]--+-00.0  NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]\n |           |            \\-00.1  NVIDIA Corporation AD102 High Definition Audio Controller\n |           \\-03.1-[02-05]----00.0-[03-05]--+-00.0-[04]----00.0  NVIDIA Corporation Device 2335\n |                                           \\-01.0-[05]----00.0  Mellanox Technologies MT2910\n \\-[0000:40]-+-00.0  Host\n             \\-01.1-[41]----00.0  NVIDIA Corporation GB202 [GeForce RTX 5090]\n",
        );
        let get = |s: &str| &f.devices[&Bdf::parse(s).unwrap()];
        assert_eq!(
            get("01:00.0").up,
            Some(Up::Bridge(Bdf::parse("00:01.1").unwrap()))
        );
        assert_eq!(get("00:01.1").up, Some(Up::Host(0, 0)));
        assert_eq!(
            get("04:00.0").up,
            Some(Up::Bridge(Bdf::parse("03:00.0").unwrap()))
        );
        assert_eq!(
            get("03:00.0").up,
            Some(Up::Bridge(Bdf::parse("02:00.0").unwrap()))
        );
        assert_eq!(
            get("05:00.0").up,
            Some(Up::Bridge(Bdf::parse("03:01.0").unwrap()))
        );
        assert_eq!(
            get("41:00.0").up,
            Some(Up::Bridge(Bdf::parse("40:01.1").unwrap()))
        );
        assert_eq!(get("40:01.1").up, Some(Up::Host(0, 0x40)));
        assert_eq!(get("04:00.0").kind, Some(DevKind::Gpu));
        assert_eq!(
            get("04:00.0").name.as_deref(),
            Some("NVIDIA Corporation [H200 SXM 141GB]")
        );
        assert_eq!(get("01:00.1").kind, Some(DevKind::Other));
        assert_eq!(get("05:00.0").kind, Some(DevKind::Other));
    }

    #[test]
    fn blocks_give_links_payloads_tags_and_acs() {
        let f = tree(
            "01:00.0 VGA compatible controller: NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] (rev a1)\n\
             \tNUMA node: 0\n\
             \tCapabilities: [78] Express (v2) Legacy Endpoint, MSI 00\n\
             \t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0\n\
             \t\tDevCtl:\tCorrErr+\n\
             \t\t\tMaxPayload 128 bytes, MaxReadReq 512 bytes\n\
             \t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L1\n\
             \t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16\n\
             \t\tDevCap2: Completion Timeout: Range AB\n\
             \t\t\t 10BitTagComp+ 10BitTagReq+ OBFF Via message\n\
             \t\tDevCtl2: Completion Timeout: 50us to 50ms, TimeoutDis- LTR+ 10BitTagReq- OBFF Via WAKE#,\n\
             \n\
             00:01.1 PCI bridge: AMD Device 14ab\n\
             \t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+\n",
        );
        let d = &f.devices[&Bdf::parse("01:00.0").unwrap()];
        assert_eq!((d.cap, d.sta), (Some((4, 16)), Some((1, 16, true))));
        assert_eq!((d.mps, d.mrrs, d.numa), (Some(128), Some(512), Some(0)));
        assert_eq!((d.tags_10bit, d.port), (Some(false), Some(Port::Endpoint)));
        let r = &f.devices[&Bdf::parse("00:01.1").unwrap()];
        assert_eq!(
            (r.kind, r.acs_redirect),
            (Some(DevKind::Bridge), Some(true))
        );
    }

    #[test]
    fn a_re_indented_tree_is_located() {
        let lines = ["-[0000:00]-+-00.0  Host", "   +-02.0  x"];
        let e = scan("t.txt", &lines, &mut Facts::default(), &mut vec![])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.txt:2:1: column 6: device 02.0 has no bus"),
            "{e}"
        );
    }
}
