//! NCCL's topology XML as `NCCL_TOPO_DUMP_FILE` writes it
//! (`ncclTopoGetXmlFromSys`, `src/graph/xml.cc`; NVIDIA/nccl@5067397):
//! `<system version="1">`, a `<cpu numaid= vendor= familyid= modelid=
//! host_hash=>` per NUMA node holding a rank's device, `<pci busid= class=
//! vendor= device= link_speed= link_width=>` nested as NCCL walks sysfs (a
//! PCI switch is one `<pci>` of class `0x060400` whose children are the
//! devices below it), `<gpu dev= sm= rank=>` with its `<nvlink target=
//! count= tclass=>`, `<nic>`. `link_speed`/`link_width` are the lower of the
//! device's and its port's maxima from sysfs, or for a GPU NVML's current
//! link, which an idle GPU may have trained down. What it cannot say: which
//! host bridge of a NUMA node a device hangs from (NCCL folds them into the
//! CPU), payload and read request sizes.

use super::pci::{Bdf, gen_of_speed, model_of_device_id};
use super::{At, DevKind, Facts, Port, Up, located, merge};
use crate::error::TopoError;
use crate::xml::tags;
use std::collections::BTreeMap;

pub(crate) fn scan(
    file: &str,
    text: &str,
    facts: &mut Facts,
    found: &mut Vec<String>,
) -> Result<(), TopoError> {
    // the line (1-based) of a byte offset: the newlines before it, found by
    // binary search (every tag is located, so no count from the top)
    let newlines: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
    let line_of = |offset: usize| newlines.partition_point(|&n| n < offset) + 1;
    let mut from = 0;
    let mut systems = 0;
    let mut gpus = 0;
    let mut switches = 0;
    while let Some(rel) = text[from..].find("<system") {
        let start = from + rel;
        let end = text[start..]
            .find("</system>")
            .map(|e| start + e + "</system>".len());
        let region = &text[start..end.unwrap_or(text.len())];
        let toks = tags(region).map_err(|e| {
            located(
                file,
                line_of(start + e.offset),
                format!("NCCL topology XML: {}", e.message),
            )
        })?;
        // (tag name, pci bus ID, start offset)
        let mut stack: Vec<(String, Option<Bdf>, usize)> = Vec::new();
        let mut numa: Option<i64> = None;
        let mut gpu_at: Option<Bdf> = None;
        // the line of each bus ID's `<pci>`, and of each one's `<gpu>`
        let mut pci_line: BTreeMap<Bdf, usize> = BTreeMap::new();
        let mut gpu_line: BTreeMap<Bdf, usize> = BTreeMap::new();
        // the open `<pci>`s, outermost first, and how many of each bus ID
        // (the stack's, kept so that no tag scans the stack)
        let mut pci_path: Vec<Bdf> = Vec::new();
        let mut open_pci: BTreeMap<Bdf, usize> = BTreeMap::new();
        for t in &toks {
            let at = start + t.offset;
            let here = line_of(at);
            let loc = |m: String| located(file, here, m);
            if t.closing {
                match stack.pop() {
                    Some((name, b, _)) if name == t.name => {
                        if let Some(b) = b
                            && let Some(n) = open_pci.get_mut(&b)
                        {
                            pci_path.pop();
                            *n -= 1;
                            if *n == 0 {
                                open_pci.remove(&b);
                            }
                        }
                    }
                    Some((name, _, open)) => {
                        return Err(loc(format!(
                            "</{}> closes <{name}> (opened at line {})",
                            t.name,
                            line_of(open)
                        )));
                    }
                    None => return Err(loc(format!("</{}> closes nothing", t.name))),
                }
                if t.name == "gpu" {
                    gpu_at = None;
                }
                continue;
            }
            let parent_pci = pci_path.last().copied();
            match t.name.as_str() {
                "system" => systems += 1,
                "cpu" => {
                    numa = t
                        .get("numaid")
                        .and_then(|n| n.parse().ok())
                        .filter(|n| *n >= 0);
                    if let Some(h) = t.get("host_hash") {
                        match facts.hosts.get(file) {
                            Some(old) if old != h => {
                                return Err(loc(format!(
                                    "a second machine (host_hash {h}; the first is {old}): import one machine at a time"
                                )));
                            }
                            _ => {
                                facts.hosts.insert(file.to_string(), h.to_string());
                            }
                        }
                    }
                    if let Some(n) = numa {
                        let c = facts.cpus.entry(n).or_default();
                        c.vendor = t.get("vendor").map(String::from).or(c.vendor.take());
                        c.family = t.get("familyid").and_then(|v| v.parse().ok()).or(c.family);
                        c.model = t.get("modelid").and_then(|v| v.parse().ok()).or(c.model);
                    }
                }
                "pci" => {
                    let id = t.get("busid").unwrap_or("");
                    let bdf = Bdf::parse(id)
                        .ok_or_else(|| loc(format!("<pci busid=\"{id}\"> is not a PCI address")))?;
                    let class = t.get("class").unwrap_or("");
                    let hexv = |k: &str| {
                        t.get(k)
                            .and_then(|v| u16::from_str_radix(v.trim_start_matches("0x"), 16).ok())
                    };
                    // NCCL writes a device once per dump; nested in itself
                    // it is a loop, which the walk up the tree reports
                    if let Some(first) = pci_line.insert(bdf, here)
                        && !open_pci.contains_key(&bdf)
                    {
                        return Err(loc(format!(
                            "pci busid {bdf} appears twice in this NCCL topology XML (first at line {first}): a bus ID names one device (is the dump edited, or two spliced?)"
                        )));
                    }
                    let mut notes = Vec::new();
                    let d = facts.device(bdf, file);
                    d.xml_up = Some(match parent_pci {
                        Some(p) => Up::Bridge(p),
                        None => Up::Numa(numa.unwrap_or(-1)),
                    });
                    d.xml_up_at = Some(At::new(file, here));
                    if class.starts_with("0x0604") {
                        d.kind = Some(DevKind::Bridge);
                        d.port.get_or_insert(Port::NcclSwitch);
                        switches += 1;
                    } else if d.kind.is_none() {
                        d.kind = Some(DevKind::Other);
                    }
                    if hexv("vendor") == Some(0x10de)
                        && let Some(id) = hexv("device")
                    {
                        d.device_id = Some(id);
                    }
                    let speed = t.get("link_speed").and_then(gen_of_speed);
                    let width = t
                        .get("link_width")
                        .and_then(|w| w.parse().ok())
                        .filter(|w| *w > 0);
                    if speed.is_some() || width.is_some() {
                        d.xml_link = Some((speed, width));
                    }
                    if let Some(n) = numa {
                        merge(
                            &mut d.numa,
                            n,
                            || format!("device {bdf} NUMA node"),
                            &mut notes,
                        );
                    }
                    facts.warnings.extend(notes);
                }
                "gpu" => {
                    let Some(bdf) = parent_pci else {
                        return Err(loc("<gpu> outside a <pci>".into()));
                    };
                    if let Some(first) = gpu_line.insert(bdf, here) {
                        return Err(loc(format!(
                            "a second <gpu> on pci busid {bdf} (the first at line {first}): two GPUs cannot share one bus ID"
                        )));
                    }
                    gpus += 1;
                    gpu_at = Some(bdf);
                    let d = facts.device(bdf, file);
                    d.kind = Some(DevKind::Gpu);
                    d.cc = t.get("sm").and_then(|v| v.parse().ok());
                    let name = d
                        .device_id
                        .and_then(model_of_device_id)
                        .map(|m| format!("NVIDIA {m}"));
                    if let (Some(dev), Some(name)) =
                        (t.get("dev").and_then(|v| v.parse::<usize>().ok()), name)
                    {
                        super::smi::add_cuda(facts, dev, name, Some(bdf), file);
                    }
                }
                "nvlink" => {
                    if let Some(g) = gpu_at {
                        let target = t.get("target").unwrap_or("").to_string();
                        let count = t.get("count").and_then(|c| c.parse().ok()).unwrap_or(1);
                        let nvswitch =
                            t.get("tclass") == Some("0x068000") || target.starts_with("fffffff");
                        facts
                            .device(g, file)
                            .nvlinks
                            .push((target, count, nvswitch));
                    }
                }
                _ => {}
            }
            if !t.self_closing {
                let bdf = if t.name == "pci" {
                    Bdf::parse(t.get("busid").unwrap_or(""))
                } else {
                    None
                };
                if let Some(b) = bdf {
                    pci_path.push(b);
                    *open_pci.entry(b).or_default() += 1;
                }
                stack.push((t.name.clone(), bdf, at));
            }
        }
        if let Some((name, _, open)) = stack.last() {
            return Err(located(
                file,
                line_of(text.len()),
                format!(
                    "NCCL topology XML ends inside <{name}> (opened at line {}): is the dump cut?",
                    line_of(*open)
                ),
            ));
        }
        from = end.unwrap_or(text.len());
    }
    if systems > 0 {
        found.push(format!(
            "NCCL topology XML ({gpus} GPUs, {switches} PCI switch{}, {} NUMA node{})",
            if switches == 1 { "" } else { "es" },
            facts.cpus.len(),
            if facts.cpus.len() == 1 { "" } else { "s" }
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_gpus_and_nvlinks() {
        let mut f = Facts::default();
        let mut found = vec![];
        scan(
            "x.xml",
            r#"text <40554> before
<system version="1">
  <cpu host_hash="0x1" numaid="0" vendor="GenuineIntel" familyid="6" modelid="207">
    <pci busid="0000:16:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2335" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1">
          <nvlink target="0000:07:00.0" count="5" tclass="0x068000"/>
        </gpu>
      </pci>
    </pci>
  </cpu>
</system>"#,
            &mut f,
            &mut found,
        )
        .unwrap();
        let g = &f.devices[&Bdf::parse("18:00.0").unwrap()];
        assert_eq!(g.xml_up, Some(Up::Bridge(Bdf::parse("16:00.0").unwrap())));
        assert_eq!(
            (g.kind, g.cc, g.xml_link),
            (Some(DevKind::Gpu), Some(90), Some((Some(5), Some(16))))
        );
        assert_eq!(g.nvlinks, vec![("0000:07:00.0".to_string(), 5, true)]);
        assert_eq!(
            f.devices[&Bdf::parse("16:00.0").unwrap()].xml_up,
            Some(Up::Numa(0))
        );
        assert_eq!(f.cuda[&0].0, "NVIDIA H200 SXM 141GB");
        assert!(
            found[0].starts_with("NCCL topology XML (1 GPUs, 1 PCI switch"),
            "{found:?}"
        );
    }

    #[test]
    fn a_cut_dump_is_located() {
        let text = "<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"0000:5a:00.0\" class=\"0x060400\">\n";
        let e = scan("cut.xml", text, &mut Facts::default(), &mut vec![])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cut.xml:4:1: NCCL topology XML ends inside <pci> (opened at line 3)"),
            "{e}"
        );
    }
}
