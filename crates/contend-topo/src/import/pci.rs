//! PCI facts shared by the importers: bus/device/function addresses as each
//! tool writes them, link speeds to generations, NVIDIA device IDs to model
//! names, and the datasheet figures of the GPU models the topology needs.

use std::fmt;

/// A PCI address: domain, bus, device, function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bdf {
    pub domain: u16,
    pub bus: u8,
    pub dev: u8,
    pub func: u8,
}

impl Bdf {
    /// Parses `01:00.0`, `0000:01:00.0`, nvidia-smi's `00000000:01:00.0`
    /// and nvbandwidth's `00000000:19:00` (function 0).
    pub fn parse(s: &str) -> Option<Bdf> {
        let s = s.trim();
        let (rest, func) = match s.rsplit_once('.') {
            Some((r, f)) => (r, u8::from_str_radix(f, 16).ok().filter(|f| *f < 8)?),
            None => (s, 0),
        };
        let parts: Vec<&str> = rest.split(':').collect();
        let (domain, bus, dev) = match parts.as_slice() {
            [b, d] => ("0", *b, *d),
            [dom, b, d] => (*dom, *b, *d),
            _ => return None,
        };
        fn hex(x: &str, max: usize) -> Option<&str> {
            (!x.is_empty() && x.len() <= max).then_some(x)
        }
        let domain = u32::from_str_radix(hex(domain, 8)?, 16).ok()?;
        Some(Bdf {
            domain: u16::try_from(domain).ok()?,
            bus: u8::from_str_radix(hex(bus, 2)?, 16).ok()?,
            dev: u8::from_str_radix(hex(dev, 2)?, 16)
                .ok()
                .filter(|d| *d < 32)?,
            func,
        })
    }
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{}",
            self.domain, self.bus, self.dev, self.func
        )
    }
}

/// The PCIe generation of a link speed as lspci (`16GT/s`) and NCCL
/// (`16.0 GT/s PCIe`) write it: 2.5, 5, 8, 16, 32, 64 GT/s are Gen1–Gen6.
pub fn gen_of_speed(s: &str) -> Option<u8> {
    let t = s.trim();
    let n: String = t
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let rest = t[n.len()..].trim_start();
    if !rest.starts_with("GT/s") {
        return None;
    }
    let v: f64 = n.parse().ok()?;
    [2.5, 5.0, 8.0, 16.0, 32.0, 64.0]
        .iter()
        .position(|x| (x - v).abs() < 1e-6)
        .map(|i| i as u8 + 1)
}

/// NVIDIA PCI device IDs of the GPUs the importers meet, as the public PCI
/// ID database lists them (pci-ids.ucw.cz, vendor 10de), for NCCL's XML,
/// which names a GPU by `device="0x…"` only.
const DEVICE_IDS: [(u16, &str); 31] = [
    (0x1db1, "Tesla V100 SXM2 16GB"),
    (0x1db4, "Tesla V100 PCIe 16GB"),
    (0x1db5, "Tesla V100 SXM2 32GB"),
    (0x1db6, "Tesla V100 PCIe 32GB"),
    (0x20b0, "A100 SXM4 40GB"),
    (0x20b1, "A100 PCIe 40GB"),
    (0x20f1, "A100 PCIe 40GB"),
    (0x20b2, "A100 SXM4 80GB"),
    (0x20b5, "A100 PCIe 80GB"),
    (0x20b7, "A30 PCIe"),
    (0x2204, "GeForce RTX 3090"),
    (0x2230, "RTX A6000"),
    (0x2235, "A40"),
    (0x2236, "A10"),
    (0x2237, "A10G"),
    (0x2684, "GeForce RTX 4090"),
    (0x26b1, "RTX 6000 Ada Generation"),
    (0x26b5, "L40"),
    (0x26b9, "L40S"),
    (0x27b8, "L4"),
    (0x2321, "H100 NVL"),
    (0x2322, "H800 PCIe"),
    (0x2324, "H800"),
    (0x2329, "H20"),
    (0x2330, "H100 SXM5 80GB"),
    (0x2331, "H100 PCIe"),
    (0x2335, "H200 SXM 141GB"),
    (0x233b, "H200 NVL"),
    (0x2b85, "GeForce RTX 5090"),
    (0x2bb1, "RTX PRO 6000 Blackwell Workstation Edition"),
    (0x2bb5, "RTX PRO 6000 Blackwell Server Edition"),
];

/// The model name of an NVIDIA device ID.
pub fn model_of_device_id(id: u16) -> Option<&'static str> {
    DEVICE_IDS.iter().find(|(d, _)| *d == id).map(|(_, n)| *n)
}

/// What a GPU model's datasheet says, as the topology needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Datasheet {
    pub model: &'static str,
    pub sms: u32,
    pub memory_gbps: f64,
    /// The PCIe generation its x16 link runs at.
    pub pcie_gen: u8,
    /// Compute capability ×10.
    pub cc: u32,
    pub source: &'static str,
}

/// Name tokens an entry needs (every one), most specific entries first.
const DATASHEETS: [(&[&str], Datasheet); 25] = {
    const fn d(
        model: &'static str,
        sms: u32,
        memory_gbps: f64,
        pcie_gen: u8,
        cc: u32,
        source: &'static str,
    ) -> Datasheet {
        Datasheet {
            model,
            sms,
            memory_gbps,
            pcie_gen,
            cc,
            source,
        }
    }
    [
        (
            &["h200", "nvl"],
            d(
                "H200 NVL",
                132,
                4800.0,
                5,
                90,
                "NVIDIA H200 datasheet (H200 NVL: 4.8 TB/s HBM3e)",
            ),
        ),
        (
            &["h200"],
            d(
                "H200",
                132,
                4800.0,
                5,
                90,
                "NVIDIA H200 datasheet (132 SMs, 4.8 TB/s HBM3e)",
            ),
        ),
        (
            &["h100", "nvl"],
            d(
                "H100 NVL",
                132,
                3900.0,
                5,
                90,
                "NVIDIA H100 datasheet (H100 NVL: 3.9 TB/s)",
            ),
        ),
        (
            &["h100l"],
            d(
                "H100 NVL",
                132,
                3900.0,
                5,
                90,
                "NVIDIA H100 datasheet (H100 NVL: 3.9 TB/s)",
            ),
        ),
        (
            &["h100", "pcie"],
            d(
                "H100 PCIe",
                114,
                2000.0,
                5,
                90,
                "NVIDIA H100 datasheet (H100 PCIe: 114 SMs, 2 TB/s)",
            ),
        ),
        (
            &["h100"],
            d(
                "H100 SXM",
                132,
                3350.0,
                5,
                90,
                "NVIDIA H100 datasheet (H100 SXM: 132 SMs, 3.35 TB/s)",
            ),
        ),
        (
            &["a100", "80gb", "pcie"],
            d(
                "A100 80GB PCIe",
                108,
                1935.0,
                4,
                80,
                "NVIDIA A100 datasheet (80GB PCIe: 1,935 GB/s)",
            ),
        ),
        (
            &["a100", "80gb"],
            d(
                "A100 80GB SXM4",
                108,
                2039.0,
                4,
                80,
                "NVIDIA A100 datasheet (80GB SXM: 2,039 GB/s)",
            ),
        ),
        (
            &["a100"],
            d(
                "A100 40GB",
                108,
                1555.0,
                4,
                80,
                "NVIDIA A100 datasheet (40GB: 1,555 GB/s)",
            ),
        ),
        (
            &["a30"],
            d("A30", 56, 933.0, 4, 80, "NVIDIA A30 datasheet (933 GB/s)"),
        ),
        (
            &["l40s"],
            d(
                "L40S",
                142,
                864.0,
                4,
                89,
                "NVIDIA L40S datasheet (142 SMs, 864 GB/s GDDR6)",
            ),
        ),
        (
            &["l40"],
            d(
                "L40",
                142,
                864.0,
                4,
                89,
                "NVIDIA L40 datasheet (142 SMs, 864 GB/s GDDR6)",
            ),
        ),
        (
            &["l20"],
            d(
                "L20",
                92,
                864.0,
                4,
                89,
                "NVIDIA L20 datasheet (92 SMs, 864 GB/s GDDR6)",
            ),
        ),
        (
            &["l4"],
            d(
                "L4",
                58,
                300.0,
                4,
                89,
                "NVIDIA L4 datasheet (58 SMs, 300 GB/s GDDR6)",
            ),
        ),
        (
            &["6000", "ada"],
            d(
                "RTX 6000 Ada Generation",
                142,
                960.0,
                4,
                89,
                "NVIDIA RTX 6000 Ada Generation datasheet (18,176 CUDA cores = 142 SMs, 960 GB/s GDDR6)",
            ),
        ),
        (
            &["6000", "blackwell"],
            d(
                "RTX PRO 6000 Blackwell",
                188,
                1792.0,
                5,
                120,
                "NVIDIA RTX PRO 6000 Blackwell datasheet (188 SMs, 1,792 GB/s GDDR7)",
            ),
        ),
        (
            &["6000", "pro"],
            d(
                "RTX PRO 6000 Blackwell",
                188,
                1792.0,
                5,
                120,
                "NVIDIA RTX PRO 6000 Blackwell datasheet (188 SMs, 1,792 GB/s GDDR7)",
            ),
        ),
        (
            &["a6000"],
            d(
                "RTX A6000",
                84,
                768.0,
                4,
                86,
                "NVIDIA RTX A6000 datasheet (84 SMs, 768 GB/s GDDR6)",
            ),
        ),
        (
            &["a40"],
            d(
                "A40",
                84,
                696.0,
                4,
                86,
                "NVIDIA A40 datasheet (84 SMs, 696 GB/s GDDR6)",
            ),
        ),
        (
            &["a10"],
            d(
                "A10",
                72,
                600.0,
                4,
                86,
                "NVIDIA A10 datasheet (72 SMs, 600 GB/s GDDR6)",
            ),
        ),
        (
            &["5090"],
            d(
                "GeForce RTX 5090",
                170,
                1792.0,
                5,
                120,
                "NVIDIA GeForce RTX 5090 specifications (170 SMs, 1,792 GB/s GDDR7)",
            ),
        ),
        (
            &["4090"],
            d(
                "GeForce RTX 4090",
                128,
                1008.0,
                4,
                89,
                "NVIDIA Ada GPU architecture whitepaper (RTX 4090: 128 SMs, 1,008 GB/s GDDR6X)",
            ),
        ),
        (
            &["3090", "ti"],
            d(
                "GeForce RTX 3090 Ti",
                84,
                1008.0,
                4,
                86,
                "NVIDIA GeForce RTX 3090 Ti specifications (84 SMs, 1,008 GB/s)",
            ),
        ),
        (
            &["3090"],
            d(
                "GeForce RTX 3090",
                82,
                936.0,
                4,
                86,
                "NVIDIA Ampere GA102 whitepaper (RTX 3090: 82 SMs, 936 GB/s GDDR6X)",
            ),
        ),
        (
            &["v100"],
            d(
                "Tesla V100",
                80,
                900.0,
                3,
                70,
                "NVIDIA V100 datasheet (80 SMs, 900 GB/s HBM2)",
            ),
        ),
    ]
};

/// The datasheet of a GPU model name (`NVIDIA RTX 6000 Ada Generation`,
/// `AD102GL [RTX 6000 Ada Generation]`, `NVIDIA A100 80GB PCIe`), if the
/// table has it.
pub fn datasheet(name: &str) -> Option<Datasheet> {
    let lower = name.to_ascii_lowercase();
    let tokens: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    DATASHEETS
        .iter()
        .find(|(need, _)| need.iter().all(|n| tokens.contains(n)))
        .map(|(_, d)| *d)
}

/// The model part of an lspci device name: the bracketed marketing name
/// (`AD102GL [RTX 6000 Ada Generation]` → `RTX 6000 Ada Generation`), or
/// the name less its vendor.
pub fn model_of_lspci_name(name: &str) -> String {
    let n = name.trim().trim_start_matches("NVIDIA Corporation").trim();
    let n = n.split(" (rev").next().unwrap_or(n).trim();
    match (n.find('['), n.rfind(']')) {
        (Some(a), Some(b)) if b > a + 1 && !n[a + 1..b].contains("10de:") => {
            n[a + 1..b].trim().to_string()
        }
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_as_each_tool_writes_them() {
        let b = Bdf::parse("0000:c1:00.0").unwrap();
        assert_eq!(Bdf::parse("c1:00.0"), Some(b));
        assert_eq!(Bdf::parse("00000000:C1:00.0"), Some(b));
        assert_eq!(Bdf::parse("00000000:c1:00"), Some(b));
        assert_eq!(b.to_string(), "0000:c1:00.0");
        assert!(Bdf::parse("c1:20.0").is_none() && Bdf::parse("x").is_none());
    }

    #[test]
    fn speeds_models_and_datasheets() {
        assert_eq!(gen_of_speed("16GT/s"), Some(4));
        assert_eq!(gen_of_speed("32.0 GT/s PCIe"), Some(5));
        assert_eq!(gen_of_speed("2.5GT/s (downgraded)"), Some(1));
        assert_eq!(gen_of_speed("unknown"), None);
        assert_eq!(model_of_device_id(0x20b5), Some("A100 PCIe 80GB"));
        for (name, model) in [
            ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada Generation"),
            (
                "AD102GL [RTX 6000 Ada Generation]",
                "RTX 6000 Ada Generation",
            ),
            ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
            ("A100 PCIe 80GB", "A100 80GB PCIe"),
            ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM4"),
            ("NVIDIA H100 80GB HBM3", "H100 SXM"),
            ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
            (
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                "RTX PRO 6000 Blackwell",
            ),
            ("NVIDIA L40S", "L40S"),
            ("NVIDIA L40", "L40"),
        ] {
            assert_eq!(datasheet(name).map(|d| d.model), Some(model), "{name}");
        }
        assert!(datasheet("NVIDIA Corporation Device 2335").is_none());
        assert_eq!(
            model_of_lspci_name("NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] (rev a1)"),
            "RTX 6000 Ada Generation"
        );
        assert_eq!(
            model_of_lspci_name("NVIDIA Corporation Device 2335"),
            "Device 2335"
        );
    }
}
