//! `contend topo import` on hostile input: a PCIe tree that loops, a bus ID
//! given to two devices, an `nvidia-smi topo -m` matrix that contradicts
//! itself, and a topology whose GPUs reach no host memory. Each ends, fast,
//! in an error that names the file and line and says what is wrong — never
//! a hang, a panic or a topology that quietly loses a GPU.

use contend_topo::import::{ImportedTopology, import_topology};
use contend_topo::{TopoError, parse_topology};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(rel: &str) -> String {
    let p = root().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Imports `inputs` on a thread and gives up after two seconds (an input
/// that made the importer loop would otherwise hang the suite).
fn import_within_2s(inputs: &[(&str, &str)]) -> Result<ImportedTopology, TopoError> {
    let inputs: Vec<(String, String)> = inputs
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(import_topology(&inputs, None));
    });
    rx.recv_timeout(Duration::from_secs(2))
        .expect("the import did not end within 2 s (a loop?)")
}

/// The error of an import that must fail.
fn error_of(inputs: &[(&str, &str)]) -> String {
    match import_within_2s(inputs) {
        Ok(t) => panic!(
            "accepted ({} GPUs): {:#?}",
            t.topology.gpus().len(),
            t.warnings
        ),
        Err(e) => e.to_string(),
    }
}

fn has(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "expected `{p}` in: {e}");
    }
    assert!(
        !e.contains("Bridge(") && !e.contains("Bdf {") && !e.contains("Some("),
        "Rust Debug text in: {e}"
    );
}

/// One NCCL topology dump (NCCL_TOPO_DUMP_FILE) of an H100 box: a switch
/// under NUMA node 0 with the GPU below it; `inner` is written inside the
/// switch's `<pci>` before the GPU.
fn nccl_xml(inner: &str) -> String {
    format!(
        r#"<system version="1">
  <cpu host_hash="0x8a1b" numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:15:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">
{inner}      <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1"/>
      </pci>
    </pci>
  </cpu>
</system>
"#
    )
}

#[test]
fn the_base_nccl_dump_imports() {
    let xml = nccl_xml("");
    let t = import_within_2s(&[("h100.xml", &xml)]).unwrap();
    assert_eq!(t.topology.gpus().len(), 1);
}

#[test]
fn a_pci_bridge_nested_in_itself_is_located() {
    // <pci busid=X> inside <pci busid=X>: the walk up the tree looped and
    // allocated without end
    let xml = r#"<system version="1">
  <cpu host_hash="0x8a1b" numaid="0" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:15:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:15:00.0" class="0x060400" vendor="0x1000" device="0xc030" link_speed="32.0 GT/s PCIe" link_width="16">
        <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
          <gpu dev="0" sm="90" rank="0" gdr="1"/>
        </pci>
      </pci>
    </pci>
  </cpu>
</system>
"#;
    let e = error_of(&[("self.xml", xml)]);
    has(
        &e,
        &[
            "self.xml:4:1: ",
            "pci busid 0000:15:00.0 is its own ancestor (",
        ],
    );
}

#[test]
fn a_pci_cycle_a_b_a_is_located() {
    // A holds B, which holds A again, which holds the GPU
    let xml = r#"<system version="1">
  <cpu host_hash="0x8a1b" numaid="0" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:15:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:16:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
        <pci busid="0000:15:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
          <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
            <gpu dev="0" sm="90" rank="0" gdr="1"/>
          </pci>
        </pci>
      </pci>
    </pci>
  </cpu>
</system>
"#;
    let e = error_of(&[("cycle.xml", xml)]);
    has(
        &e,
        &[
            "cycle.xml:",
            "pci busid 0000:15:00.0 is its own ancestor (",
            "0000:16:00.0",
        ],
    );
}

#[test]
fn a_loop_with_no_gpu_below_it_is_located_too() {
    // a bridge nested in itself beside the GPU's switch: no GPU's walk
    // passes it, the tree is still not a tree
    let xml = nccl_xml(
        r#"      <pci busid="0000:17:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
        <pci busid="0000:17:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16"/>
      </pci>
"#,
    );
    let e = error_of(&[("beside.xml", &xml)]);
    has(
        &e,
        &[
            "beside.xml:5:1: ",
            "pci busid 0000:17:00.0 is its own ancestor",
        ],
    );
}

#[test]
fn two_gpus_on_one_nccl_busid_are_located() {
    // two <pci> of one busid, each with a <gpu>: "2 GPUs" in the summary,
    // one in the topology
    let xml = nccl_xml(
        r#"      <pci busid="0000:18:00.0" class="0x030200" vendor="0x10de" device="0x2330" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="1" sm="90" rank="1" gdr="1"/>
      </pci>
"#,
    );
    let e = error_of(&[("twice.xml", &xml)]);
    has(
        &e,
        &["twice.xml:7:1: ", "0000:18:00.0", "(first at line 4)"],
    );
    // two <gpu> in one <pci>
    let xml = nccl_xml("").replace(
        "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/>\n",
        "<gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\"/>\n        <gpu dev=\"1\" sm=\"90\" rank=\"1\" gdr=\"1\"/>\n",
    );
    let e = error_of(&[("two.xml", &xml)]);
    has(
        &e,
        &[
            "two.xml:6:1: ",
            "a second <gpu> on pci busid 0000:18:00.0 (the first at line 5)",
        ],
    );
}

const H200_VM: &str = "tests/fixtures/real/lspci/nccl-tests-256-h200-vm-tvv.txt";

#[test]
fn a_repeated_lspci_bus_number_is_located() {
    // two root ports both claim bus 05: the GPUs below both are 05:00.0,
    // and the import wrote 7 of 8 GPUs with a warning in Rust Debug text
    let tree = fixture(H200_VM);
    assert_eq!(
        import_within_2s(&[("vm.txt", &tree)])
            .unwrap()
            .topology
            .gpus()
            .len(),
        8
    );
    let edited = tree.replacen("+-01.5-[06]----00.0", "+-01.5-[05]----00.0", 1);
    assert_ne!(edited, tree);
    let e = error_of(&[("vm.txt", &edited)]);
    has(
        &e,
        &["vm.txt:8:1: ", "device 0000:05:00.0", "lines 7 and 8"],
    );
}

#[test]
fn an_lspci_device_under_two_parents_is_located() {
    // the same tree twice, the second moving one GPU under another port
    let tree = fixture(H200_VM);
    let moved = tree
        .replacen("+-01.4-[05]----00.0", "+-01.4-[45]----00.0", 1)
        .replacen("+-01.5-[06]----00.0", "+-01.5-[05]----00.0", 1);
    let e = error_of(&[("a.txt", &tree), ("b.txt", &moved)]);
    has(&e, &["b.txt:8:1: ", "device 0000:05:00.0", "a.txt:7"]);
}

#[test]
fn a_device_of_two_classes_in_lspci_vv_is_located() {
    let text = "01:00.0 VGA compatible controller: NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] (rev a1)\n\
                \tNUMA node: 0\n\
                \n\
                01:00.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)\n\
                \tNUMA node: 0\n";
    let e = error_of(&[("vv.txt", text)]);
    has(&e, &["vv.txt:4:1: ", "device 0000:01:00.0", "(line 1)"]);
}

/// `nvidia-smi topo -m` of a 4-GPU box: two switches of two GPUs.
const SMI: &str = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tPIX\tNODE\tNODE\t0-31\t0\t\tN/A
GPU1\tPIX\t X \tNODE\tNODE\t0-31\t0\t\tN/A
GPU2\tNODE\tNODE\t X \tPIX\t0-31\t0\t\tN/A
GPU3\tNODE\tNODE\tPIX\t X \t0-31\t0\t\tN/A
";

#[test]
fn the_base_matrix_imports() {
    let t = import_within_2s(&[("smi.txt", SMI)]).unwrap();
    assert_eq!(t.topology.gpus().len(), 4);
}

#[test]
fn an_asymmetric_matrix_is_located() {
    // GPU0→GPU1 says PIX, GPU1→GPU0 says SYS
    let smi = SMI.replacen("GPU1\tPIX", "GPU1\tSYS", 1);
    let e = error_of(&[("smi.txt", &smi)]);
    has(
        &e,
        &[
            "smi.txt:3:1: ",
            "GPU1→GPU0 is SYS",
            "GPU0→GPU1 is PIX (line 2)",
        ],
    );
}

#[test]
fn a_row_with_an_extra_column_is_located() {
    let smi = SMI.replacen(
        "GPU2\tNODE\tNODE\t X \tPIX\t",
        "GPU2\tNODE\tNODE\t X \tPIX\tPIX\t",
        1,
    );
    let e = error_of(&[("smi.txt", &smi)]);
    has(&e, &["smi.txt:4:1: ", "row GPU2", "8 cells", "7"]);
}

#[test]
fn a_diagonal_other_than_x_is_located() {
    let smi = SMI.replacen(
        "GPU3\tNODE\tNODE\tPIX\t X ",
        "GPU3\tNODE\tNODE\tPIX\tPIX",
        1,
    );
    let e = error_of(&[("smi.txt", &smi)]);
    has(&e, &["smi.txt:5:1: ", "GPU3→GPU3", "PIX", "`X`"]);
    // and an X off the diagonal
    let smi = SMI
        .replacen("GPU0\t X \tPIX", "GPU0\t X \t X ", 1)
        .replacen("GPU1\tPIX", "GPU1\t X ", 1);
    let e = error_of(&[("smi.txt", &smi)]);
    has(&e, &["smi.txt:2:1: ", "GPU0→GPU1"]);
}

const ONE_GPU_NO_MEMORY: &str = "name = \"no memory\"
[[node]]
id = \"rc0\"
kind = \"root_complex\"
[[node]]
id = \"gpu0\"
kind = \"gpu\"
sms = 132
memory_bandwidth_gbps = 4800
[[link]]
a = \"gpu0\"
b = \"rc0\"
kind = \"pcie\"
gen = 5
width = 16
";

#[test]
fn a_topology_without_host_memory_is_located() {
    let e = parse_topology("nomem.toml", ONE_GPU_NO_MEMORY)
        .unwrap_err()
        .to_string();
    has(&e, &["nomem.toml:6:", "`gpu0` reaches no host memory"]);
    // with the memory and its link it loads
    let ok = format!(
        "{ONE_GPU_NO_MEMORY}[[node]]\nid = \"mem0\"\nkind = \"host_memory\"\n[[link]]\na = \"mem0\"\nb = \"rc0\"\nkind = \"memory\"\nbandwidth_gbps = 300\n"
    );
    parse_topology("mem.toml", &ok).unwrap();
    // a memory no link reaches
    let unlinked = format!("{ONE_GPU_NO_MEMORY}[[node]]\nid = \"mem0\"\nkind = \"host_memory\"\n");
    let e = parse_topology("unlinked.toml", &unlinked)
        .unwrap_err()
        .to_string();
    has(&e, &["unlinked.toml:6:", "`gpu0` cannot reach `mem0`"]);
}

/// A dump whose `<pci>`s nest `depth` deep under NUMA node 0, a GPU in the
/// innermost when `gpu`.
fn nested_dump(depth: usize, gpu: bool) -> String {
    let mut s = String::from("<system version=\"1\">\n  <cpu host_hash=\"0x8a1b\" numaid=\"0\">\n");
    for k in 0..depth {
        s += &format!(
            "<pci busid=\"{:04x}:{:02x}:00.0\" class=\"0x060400\">\n",
            k / 256,
            k % 256
        );
    }
    if gpu {
        s += "<pci busid=\"00ff:00:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x2330\"><gpu dev=\"0\" sm=\"90\" rank=\"0\"/></pci>\n";
    }
    s += &"</pci>\n".repeat(depth);
    s + "  </cpu>\n</system>\n"
}

#[test]
fn a_chain_deeper_than_pcie_allows_is_located() {
    // a GPU under 300 nested bridges, and the same bridges with no GPU
    // (a PCIe domain has 256 buses: one per level)
    for gpu in [true, false] {
        let e = error_of(&[("deep.xml", &nested_dump(300, gpu))]);
        has(&e, &["deep.xml:", "has more than 256 bridges above it"]);
    }
    // 200 levels is deep, and a tree
    let t = import_within_2s(&[("200.xml", &nested_dump(200, true))]).unwrap();
    assert_eq!(t.topology.gpus().len(), 1);
}

#[test]
fn a_deeply_nested_dump_ends_fast() {
    // 200,000 nested tags (2.6 MB): each tag scanned the open ones, and
    // the import took 25 s
    let n = 200_000;
    let xml = format!(
        "<system version=\"1\">\n<cpu numaid=\"0\">\n{}{}</cpu>\n</system>\n",
        "<nic>\n".repeat(n),
        "</nic>\n".repeat(n)
    );
    let e = error_of(&[("nic.xml", &xml)]);
    has(&e, &["no GPU in the inputs (nic.xml)"]);
    // and 100,000 nested <pci>s, all on one line
    let mut xml = String::from("<system version=\"1\"><cpu numaid=\"0\">");
    for k in 0..100_000usize {
        xml += &format!(
            "<pci busid=\"{:04x}:{:02x}:00.0\" class=\"0x060400\">",
            k / 256,
            k % 256
        );
    }
    xml += &"</pci>".repeat(100_000);
    xml += "</cpu></system>\n";
    let e = error_of(&[("one-line.xml", &xml)]);
    has(
        &e,
        &["one-line.xml:1:1: ", "has more than 256 bridges above it"],
    );
}
