//! Whether two GPU names are the same model, as a log and a topology
//! write them (`NVIDIA GeForce RTX 4090` and `RTX 4090`, `NVIDIA RTX PRO
//! 6000 Blackwell Server Edition` and `RTX PRO 6000 Blackwell`, `NVIDIA
//! H100 80GB HBM3` and `H100 SXM`), so a measurement from one model is
//! never fitted to a topology of another.
//!
//! A name's key is its model tokens: lowercase words with a digit (`4090`,
//! `h200`, `a6000`, `l40s`), less memory sizes and kinds (`80gb`, `hbm3`,
//! `gddr7`) and form factors (`sxm4`, `pcie`, `nvl`), plus the family words
//! that tell apart models of one number (`pro`, `ada`, `quadro`,
//! `blackwell`). Text in parentheses is a note (`(PCI 0000:06:00.0,
//! sm_90)`, `(edition not stated)`) and is left out. Two names are the same
//! model when their number tokens are equal and no family word of one
//! contradicts the other; a name without a number token tells nothing.

use std::collections::BTreeSet;

/// Family words that distinguish models sharing a number (RTX PRO 6000
/// Blackwell, RTX 6000 Ada, Quadro RTX 6000).
const FAMILY: [&str; 5] = ["pro", "ada", "quadro", "blackwell", "titan"];

fn is_noise(t: &str) -> bool {
    let gb = t
        .strip_suffix("gb")
        .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
    gb || t.starts_with("hbm")
        || t.starts_with("gddr")
        || t.starts_with("sxm")
        || t == "pcie"
        || t.starts_with("nvl")
        || t.starts_with("gen")
}

/// The model tokens of a name: (numbers, family words).
pub fn model_key(name: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut depth = 0u32;
    let mut plain = String::new();
    for c in name.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c.to_ascii_lowercase()),
            _ => {}
        }
    }
    let mut numbers = BTreeSet::new();
    let mut family = BTreeSet::new();
    for t in plain.split(|c: char| !c.is_ascii_alphanumeric()) {
        if t.is_empty() {
            continue;
        }
        if FAMILY.contains(&t) {
            family.insert(t.to_string());
        } else if t.chars().any(|c| c.is_ascii_digit()) && !is_noise(t) {
            numbers.insert(t.to_string());
        }
    }
    (numbers, family)
}

/// `Some(true)` for the same model, `Some(false)` for different ones,
/// `None` when either name has no model number.
pub fn same_model(a: &str, b: &str) -> Option<bool> {
    let (na, fa) = model_key(a);
    let (nb, fb) = model_key(b);
    if na.is_empty() || nb.is_empty() {
        return None;
    }
    if na != nb {
        return Some(false);
    }
    // a family word named on both sides that disagrees: two architectures,
    // or PRO (Blackwell) against Ada or Quadro (Turing)
    let arch = |f: &BTreeSet<String>| ["ada", "blackwell"].into_iter().find(|w| f.contains(*w));
    let one_way = |x: &BTreeSet<String>, y: &BTreeSet<String>| {
        x.contains("pro") && (y.contains("ada") || y.contains("quadro"))
            || x.contains("quadro") && y.contains("ada")
    };
    let contradicts = matches!((arch(&fa), arch(&fb)), (Some(x), Some(y)) if x != y)
        || one_way(&fa, &fb)
        || one_way(&fb, &fa);
    Some(!contradicts)
}

/// Whether a model is a GeForce card, to which NVIDIA's stock driver gives
/// no peer-to-peer access over PCIe (NCCL then stages through host memory:
/// NVIDIA/nccl issue 1309; patched open kernel modules, tinygrad's and
/// aikitoria's forks of `open-gpu-kernel-modules`, enable it). A GeForce
/// name says `GeForce`, or its model number is an RTX 20–50 series one
/// (`RTX 4090`, `RTX 5090`: four digits, 20–50 then two more ending in 0)
/// with no workstation family word (`pro`, `ada`, `quadro`).
pub fn geforce(name: &str) -> bool {
    if name.to_ascii_lowercase().contains("geforce") {
        return true;
    }
    let (numbers, family) = model_key(name);
    let series = |t: &String| {
        let b = t.as_bytes();
        b.len() == 4
            && b.iter().all(u8::is_ascii_digit)
            && matches!(&t[..2], "20" | "30" | "40" | "50")
            && b[3] == b'0'
    };
    numbers.len() == 1
        && numbers.iter().all(series)
        && !["pro", "ada", "quadro"].iter().any(|w| family.contains(*w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geforce_cards_are_told_from_workstation_and_datacenter_ones() {
        for g in [
            "NVIDIA GeForce RTX 4090",
            "RTX 4090",
            "RTX 5090",
            "NVIDIA GeForce RTX 3090 Ti",
            "GeForce GTX 1080",
        ] {
            assert!(geforce(g), "{g}");
        }
        for w in [
            "RTX PRO 6000 Blackwell",
            "NVIDIA RTX 6000 Ada Generation",
            "NVIDIA RTX A6000",
            "NVIDIA L40S",
            "NVIDIA H100 80GB HBM3",
            "Quadro RTX 8000",
            "GPU",
        ] {
            assert!(!geforce(w), "{w}");
        }
    }

    #[test]
    fn one_model_under_its_names() {
        for (a, b) in [
            ("NVIDIA GeForce RTX 4090", "RTX 4090"),
            (
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                "RTX PRO 6000 Blackwell",
            ),
            (
                "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                "RTX PRO 6000 Blackwell (edition not stated)",
            ),
            ("NVIDIA H100 80GB HBM3", "H100 SXM"),
            ("NVIDIA A100-SXM4-80GB", "A100 80GB PCIe"),
            ("NVIDIA H200", "NVIDIA H200 (PCI 0000:00:06.0, sm_90)"),
        ] {
            assert_eq!(same_model(a, b), Some(true), "{a} / {b}");
        }
    }

    #[test]
    fn different_models_are_told_apart() {
        for (a, b) in [
            ("NVIDIA H200", "RTX PRO 6000 Blackwell"),
            ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090"),
            ("NVIDIA L40S", "NVIDIA L40"),
            ("NVIDIA RTX 6000 Ada Generation", "RTX PRO 6000 Blackwell"),
            ("NVIDIA RTX A6000", "RTX PRO 6000 Blackwell"),
        ] {
            assert_eq!(same_model(a, b), Some(false), "{a} / {b}");
        }
        assert_eq!(same_model("GPU", "H200"), None);
    }
}
