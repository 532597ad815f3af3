//! What `nvidia-smi` prints about a box: `topo -m` (the relation between
//! every pair of GPUs, CPU and NUMA affinity), `topo -p2p r|w|rw|n|a`
//! (peer-access status per pair), the default table (index, name, bus ID,
//! driver and CUDA versions); and the short reports beside them:
//! `numactl --hardware` (NUMA nodes) and the CUDA device lists of
//! p2pBandwidthLatencyTest and nvbandwidth (index, name, bus ID).

use super::pci::Bdf;
use super::{Facts, Matrix, P2p, Rel, located};
use crate::error::TopoError;

/// One CUDA device as a benchmark lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaDevice {
    pub index: usize,
    pub name: String,
    pub bdf: Option<Bdf>,
}

/// A CUDA device line: p2pBandwidthLatencyTest's `Device: 0, NVIDIA
/// GeForce RTX 4090, pciBusID: 2, pciDeviceID: 0, pciDomainID:0`
/// (cuda-samples `p2pBandwidthLatencyTest.cu`) or nvbandwidth's `Device 0:
/// NVIDIA H100 80GB HBM3 (00000000:19:00)`; `None` for any other line.
pub fn cuda_device_line(line: &str) -> Option<CudaDevice> {
    let t = line.trim();
    if let Some(d) = t.strip_prefix("Device: ") {
        let parts: Vec<&str> = d.split(',').map(str::trim).collect();
        let index = parts.first()?.parse().ok()?;
        let name = parts.get(1).copied().unwrap_or("").to_string();
        let hex = |k: &str| {
            parts
                .iter()
                .find_map(|p| p.strip_prefix(k))
                .and_then(|v| u32::from_str_radix(v.trim(), 16).ok())
        };
        let bdf = match (hex("pciDomainID:"), hex("pciBusID:"), hex("pciDeviceID:")) {
            (Some(dom), Some(bus), Some(dev)) => {
                Bdf::parse(&format!("{dom:04x}:{bus:02x}:{dev:02x}.0"))
            }
            _ => None,
        };
        return Some(CudaDevice { index, name, bdf });
    }
    let rest = t.strip_prefix("Device ")?;
    let (idx, name) = rest.split_once(':')?;
    let index = idx.trim().parse().ok()?;
    let name = name.trim();
    let (name, bdf) = match name.rsplit_once(" (") {
        Some((a, b)) if b.ends_with(')') => (a, Bdf::parse(b.trim_end_matches(')'))),
        _ => (name, None),
    };
    Some(CudaDevice {
        index,
        name: name.to_string(),
        bdf,
    })
}

/// An `nvidia-smi -L` line: `GPU 0: NVIDIA GeForce RTX 5090 (UUID:
/// GPU-…)` → (index, name).
pub fn smi_list_line(line: &str) -> Option<(usize, String)> {
    let rest = line.trim().strip_prefix("GPU ")?;
    let (idx, name) = rest.split_once(": ")?;
    let index = idx.trim().parse().ok()?;
    let (name, uuid) = name.rsplit_once(" (UUID: ")?;
    uuid.ends_with(')')
        .then(|| (index, name.trim().to_string()))
}

const P2P_CELLS: [&str; 8] = ["X", "OK", "CNS", "GNS", "TNS", "NS", "DR", "U"];

/// The GPU labels of a matrix header (`GPU0 GPU1 … NIC0 … CPU Affinity`),
/// and the extra columns after them.
fn header(t: &str) -> Option<(Vec<String>, Vec<String>)> {
    let toks: Vec<&str> = t.split_whitespace().collect();
    if toks.first() != Some(&"GPU0") {
        return None;
    }
    let labels: Vec<String> = toks
        .iter()
        .take_while(|x| !matches!(**x, "CPU" | "NUMA" | "GPU" | "Affinity"))
        .map(|s| s.to_string())
        .collect();
    let extra_text = toks[labels.len()..].join(" ");
    let mut extra = Vec::new();
    for col in ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"] {
        if extra_text.contains(col) {
            extra.push(col.to_string());
        }
    }
    let gpus = labels.iter().take_while(|l| l.starts_with("GPU")).count();
    // GPU0 GPU1 …: consecutive, then NICs
    let ordered = labels
        .iter()
        .take(gpus)
        .enumerate()
        .all(|(i, l)| *l == format!("GPU{i}"));
    ordered.then_some((labels, extra))
}

/// The `-p2p` kind a paste names near the table (`topo -p2p rw`).
fn p2p_kind(lines: &[&str], at: usize) -> Option<String> {
    lines[at.saturating_sub(6)..at].iter().rev().find_map(|l| {
        let i = l.find("-p2p")?;
        let k = l[i + 4..].split_whitespace().next()?;
        let k: String = k.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
        ["r", "w", "rw", "n", "a", "p"]
            .contains(&k.as_str())
            .then_some(k)
    })
}

/// Records a CUDA device; a full name replaces a truncated one
/// (nvidia-smi's table cuts names to `NVIDIA RTX 6000 Ada Gene...`).
pub(crate) fn add_cuda(
    facts: &mut Facts,
    index: usize,
    name: String,
    bdf: Option<Bdf>,
    file: &str,
) {
    let cut = |n: &str| n.ends_with("...") || n.ends_with('…');
    match facts.cuda.get_mut(&index) {
        None => {
            facts.cuda.insert(index, (name, bdf, file.to_string()));
        }
        Some(e) => {
            if cut(&e.0) && !cut(&name) && !name.is_empty() {
                e.0 = name;
            }
            if e.1.is_none() {
                e.1 = bdf;
            }
        }
    }
}

/// What every `topo -m` matrix is: `X` on its diagonal and only there,
/// and the same relation both ways (a path between two GPUs is one path).
/// Row `r` is at line `head_line + 1 + r`.
fn check_matrix(file: &str, head_line: usize, cells: &[Vec<Rel>]) -> Result<(), TopoError> {
    for (r, row) in cells.iter().enumerate() {
        for (c, rel) in row.iter().enumerate() {
            let here = |m: String| located(file, head_line + 1 + r, m);
            if r == c && *rel != Rel::Me {
                return Err(here(format!(
                    "nvidia-smi topo -m cell GPU{r}→GPU{r} is {}: a GPU's own cell is `X`",
                    rel.name()
                )));
            }
            if r != c && *rel == Rel::Me {
                return Err(here(format!(
                    "nvidia-smi topo -m cell GPU{r}→GPU{c} is `X`, which only a GPU's own cell is"
                )));
            }
            if c < r
                && let Some(back) = cells.get(c).and_then(|x| x.get(r))
                && back != rel
            {
                return Err(here(format!(
                    "nvidia-smi topo -m is not symmetric: GPU{r}→GPU{c} is {}, but GPU{c}→GPU{r} is {} (line {}): one path joins two GPUs",
                    rel.name(),
                    back.name(),
                    head_line + 1 + c
                )));
            }
        }
    }
    Ok(())
}

pub(crate) fn scan(
    file: &str,
    lines: &[&str],
    facts: &mut Facts,
    found: &mut Vec<String>,
) -> Result<(), TopoError> {
    let mut i = 0;
    let mut table_gpus = 0usize;
    let mut cuda_list = std::collections::BTreeSet::new();
    let (mut smi_list, mut query_gpus) = (0usize, 0usize);
    let mut query_bdf: Option<Bdf> = None;
    while i < lines.len() {
        let t = lines[i].trim();
        if let Some((labels, extra)) = header(t) {
            let gpus = labels.iter().filter(|l| l.starts_with("GPU")).count();
            let head_line = i + 1;
            let mut rows: Vec<Vec<String>> = Vec::new();
            let mut tails: Vec<Vec<String>> = Vec::new();
            let mut j = i + 1;
            while j < lines.len() && rows.len() < gpus {
                let toks: Vec<&str> = lines[j].split_whitespace().collect();
                match toks.first() {
                    None => break,
                    Some(l) if *l == format!("GPU{}", rows.len()) => {
                        if toks.len() < 1 + labels.len() {
                            return Err(located(
                                file,
                                j + 1,
                                format!(
                                    "row {l} of the nvidia-smi matrix has {} of its {} cells (is the paste cut?)",
                                    toks.len() - 1,
                                    labels.len()
                                ),
                            ));
                        }
                        let width = labels.len() + extra.len();
                        if toks.len() > 1 + width {
                            return Err(located(
                                file,
                                j + 1,
                                format!(
                                    "row {l} of the nvidia-smi matrix has {} cells, its header (line {head_line}) {width}: an extra column (is the paste edited, or two tables joined?)",
                                    toks.len() - 1,
                                ),
                            ));
                        }
                        rows.push(toks[1..=gpus].iter().map(|s| s.to_string()).collect());
                        tails.push(
                            toks[1 + labels.len()..]
                                .iter()
                                .map(|s| s.to_string())
                                .collect(),
                        );
                    }
                    Some(_) => break,
                }
                j += 1;
            }
            if rows.len() < gpus {
                return Err(located(
                    file,
                    j + 1,
                    format!(
                        "the nvidia-smi matrix at line {head_line} lists {gpus} GPUs but has {} rows (is the paste cut?)",
                        rows.len()
                    ),
                ));
            }
            let p2p = rows
                .iter()
                .flatten()
                .all(|c| P2P_CELLS.contains(&c.as_str()));
            if p2p {
                facts.p2p.push(P2p {
                    file: file.to_string(),
                    line: head_line,
                    kind: p2p_kind(lines, i),
                    cells: rows,
                });
                found.push(format!(
                    "nvidia-smi topo -p2p{} ({gpus} GPUs)",
                    p2p_kind(lines, i)
                        .map(|k| format!(" {k}"))
                        .unwrap_or_default()
                ));
            } else {
                let mut cells = Vec::new();
                for (r, row) in rows.iter().enumerate() {
                    let mut out = Vec::new();
                    for c in row {
                        out.push(Rel::parse(c).ok_or_else(|| {
                            located(
                                file,
                                head_line + 1 + r,
                                format!("`{c}` is not an nvidia-smi topo -m relation (X, SYS, NODE, PHB, PXB, PIX, NV#)"),
                            )
                        })?);
                    }
                    cells.push(out);
                }
                check_matrix(file, head_line, &cells)?;
                let numa_col = extra.iter().position(|c| c == "NUMA Affinity");
                let numa = tails
                    .iter()
                    .map(|t| numa_col.and_then(|k| t.get(k)).and_then(|v| v.parse().ok()))
                    .collect();
                match &facts.matrix {
                    None => {
                        facts.matrix = Some(Matrix {
                            file: file.to_string(),
                            line: head_line,
                            cells,
                            numa,
                        });
                        found.push(format!("nvidia-smi topo -m ({gpus} GPUs)"));
                    }
                    Some(m) if m.cells != cells => {
                        return Err(located(
                            file,
                            head_line,
                            format!(
                                "this nvidia-smi topo -m ({gpus} GPUs) differs from the one at {}:{} ({} GPUs): are they one machine?",
                                m.file,
                                m.line,
                                m.cells.len()
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
            i = j;
            continue;
        }
        // nvidia-smi's table: `|   0  NVIDIA … Off |   00000000:01:00.0 Off |`
        if let Some(v) = t.split("Driver Version:").nth(1) {
            let driver = v.split_whitespace().next().unwrap_or("");
            let cuda = t
                .split("CUDA Version:")
                .nth(1)
                .and_then(|c| c.split_whitespace().next())
                .unwrap_or("");
            let p = format!("NVIDIA driver {driver}, CUDA {cuda} (nvidia-smi)");
            if !facts.platform.contains(&p) {
                facts.platform.push(p);
            }
        }
        if t.starts_with('|') {
            let cells: Vec<&str> = t.trim_matches('|').split('|').collect();
            if cells.len() >= 2 {
                let toks: Vec<&str> = cells[0].split_whitespace().collect();
                let bus = cells[1].split_whitespace().next().and_then(Bdf::parse);
                if let (Some(idx), Some(bdf)) = (toks.first().and_then(|x| x.parse().ok()), bus)
                    && toks.len() >= 3
                {
                    let name = toks[1..toks.len() - 1].join(" ");
                    add_cuda(facts, idx, name, Some(bdf), file);
                    table_gpus += 1;
                }
            }
        }
        if let Some(d) = cuda_device_line(t) {
            let index = d.index;
            add_cuda(facts, d.index, d.name, d.bdf, file);
            cuda_list.insert(index);
        }
        if let Some((index, name)) = smi_list_line(t) {
            add_cuda(facts, index, name, None, file);
            smi_list += 1;
        }
        // `nvidia-smi -q`: a `GPU 00000000:01:00.0` section per GPU, in
        // index order, its `Product Name : …` inside
        if let Some(b) = t.strip_prefix("GPU ").and_then(Bdf::parse) {
            query_bdf = Some(b);
        }
        if let Some(name) = t
            .strip_prefix("Product Name")
            .and_then(|r| r.trim_start().strip_prefix(':'))
            .map(str::trim)
            && let Some(b) = query_bdf.take()
        {
            add_cuda(facts, query_gpus, name.to_string(), Some(b), file);
            query_gpus += 1;
        }
        if let Some(n) = t
            .strip_prefix("available:")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse::<u32>().ok())
            && t.contains("nodes")
        {
            facts.numa_nodes = Some(n);
            found.push(format!(
                "numactl --hardware ({n} NUMA node{})",
                if n == 1 { "" } else { "s" }
            ));
        }
        i += 1;
    }
    if table_gpus > 0 {
        found.push(format!("nvidia-smi table ({table_gpus} GPUs)"));
    }
    if !cuda_list.is_empty() {
        found.push(format!("CUDA device list ({} GPUs)", cuda_list.len()));
    }
    if smi_list > 0 {
        found.push(format!("nvidia-smi -L ({smi_list} GPUs)"));
    }
    if query_gpus > 0 {
        found.push(format!("nvidia-smi -q ({query_gpus} GPUs)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_list_lines() {
        assert_eq!(
            smi_list_line(
                "GPU 3: NVIDIA GeForce RTX 5090 (UUID: GPU-5f0c2a8e-0000-4d1e-9c3b-0a1b2c3d4e5f)"
            ),
            Some((3, "NVIDIA GeForce RTX 5090".to_string()))
        );
        assert_eq!(smi_list_line("GPU 0: no uuid here"), None);
        assert_eq!(smi_list_line("GPU0\t X \tSYS"), None);
    }

    #[test]
    fn device_lines_of_both_benchmarks() {
        let d = cuda_device_line(
            "Device: 1, NVIDIA RTX 6000 Ada Generation, pciBusID: 41, pciDeviceID: 0, pciDomainID:0",
        )
        .unwrap();
        assert_eq!(
            (d.index, d.name.as_str()),
            (1, "NVIDIA RTX 6000 Ada Generation")
        );
        assert_eq!(d.bdf.unwrap().to_string(), "0000:41:00.0");
        let d = cuda_device_line("Device 0: NVIDIA H100 80GB HBM3 (00000000:19:00)").unwrap();
        assert_eq!(d.bdf.unwrap().to_string(), "0000:19:00.0");
        assert!(cuda_device_line("Device=0 CAN Access Peer Device=1").is_none());
    }

    #[test]
    fn a_cut_matrix_is_located() {
        let lines = [
            "\tGPU0\tGPU1\tGPU2\tCPU Affinity",
            "GPU0\t X \tPHB\tSYS\t0-7",
            "GPU1\tPHB\t X",
        ];
        let mut f = Facts::default();
        let e = scan("m.txt", &lines, &mut f, &mut vec![])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("m.txt:3:1: row GPU1"), "{e}");
    }
}
