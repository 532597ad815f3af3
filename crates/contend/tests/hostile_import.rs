//! `contend topo import` and `topo validate` on hostile input, as a user
//! runs them: a PCIe tree that loops, a bus ID given to two devices, an
//! `nvidia-smi topo -m` matrix that contradicts itself, a topology whose
//! GPUs reach no host memory. Each must exit 1 (not a panic's 101) within a
//! second, with an error naming the file and line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `text` written to the scratch folder (cargo's place for test files) as
/// `name`; its path.
fn scratch(name: &str, text: &str) -> String {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-import");
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Runs `contend` and returns its standard error; it must exit 1 within a
/// second (a child that runs longer is killed, and the test fails).
fn fails(args: &[&str]) -> String {
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(5) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("contend {args:?} ran past 5 s (a loop?): killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code();
    assert_eq!(
        code,
        Some(1),
        "contend {args:?} exited with {code:?}: {err}"
    );
    assert!(!err.contains("panicked"), "contend {args:?}: {err}");
    assert!(
        took < Duration::from_secs(1),
        "contend {args:?} took {took:?}: {err}"
    );
    err
}

fn has(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "expected `{p}` in: {err}");
    }
    assert!(!err.contains("Bridge("), "Rust Debug text in: {err}");
}

/// An NCCL topology dump of one H100 under a switch, `inner` written
/// inside the switch's `<pci>` before the GPU's.
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
fn a_pci_bridge_inside_itself_ends_in_a_located_error() {
    // looped and allocated without end
    let xml = nccl_xml("").replacen(
        "link_width=\"16\">\n      <pci busid=\"0000:18:00.0\"",
        "link_width=\"16\">\n      <pci busid=\"0000:15:00.0\" class=\"0x060400\">\n      <pci busid=\"0000:18:00.0\"",
        1,
    );
    let xml = xml.replacen(
        "    </pci>\n  </cpu>",
        "    </pci>\n    </pci>\n  </cpu>",
        1,
    );
    let f = scratch("self-nested.xml", &xml);
    let e = fails(&["topo", "import", &f]);
    has(
        &e,
        &[
            &format!("{f}:4:1: "),
            "pci busid 0000:15:00.0 is its own ancestor (it is nested in itself)",
        ],
    );
    // A holds B, which holds A
    let xml = nccl_xml(
        "      <pci busid=\"0000:16:00.0\" class=\"0x060400\">\n        <pci busid=\"0000:15:00.0\" class=\"0x060400\"/>\n      </pci>\n",
    );
    let f = scratch("a-b-a.xml", &xml);
    let e = fails(&["topo", "import", &f]);
    has(
        &e,
        &[
            &format!("{f}:4:1: "),
            "pci busid 0000:15:00.0 is its own ancestor (0000:15:00.0 under 0000:16:00.0",
        ],
    );
}

#[test]
fn two_gpus_on_one_nccl_busid_end_in_a_located_error() {
    let xml = nccl_xml(
        "      <pci busid=\"0000:18:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x2330\">\n        <gpu dev=\"1\" sm=\"90\" rank=\"1\" gdr=\"1\"/>\n      </pci>\n",
    );
    let f = scratch("two-gpus.xml", &xml);
    let e = fails(&["topo", "import", &f]);
    has(
        &e,
        &[
            &format!("{f}:7:1: "),
            "pci busid 0000:18:00.0 appears twice",
            "(first at line 4)",
        ],
    );
}

#[test]
fn a_repeated_lspci_bus_ends_in_a_located_error() {
    // wrote 7 of 8 GPUs, with a warning in Rust Debug text
    let tree = std::fs::read_to_string(
        root().join("tests/fixtures/real/lspci/nccl-tests-256-h200-vm-tvv.txt"),
    )
    .unwrap()
    .replacen("+-01.5-[06]----00.0", "+-01.5-[05]----00.0", 1);
    let f = scratch("repeated-bus.txt", &tree);
    let e = fails(&["topo", "import", &f]);
    has(
        &e,
        &[
            &format!("{f}:8:1: "),
            "lspci -t draws device 0000:05:00.0 twice (lines 7 and 8)",
        ],
    );
}

/// `nvidia-smi topo -m` of 4 GPUs, two per switch.
const SMI: &str = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tPIX\tNODE\tNODE\t0-31\t0\t\tN/A
GPU1\tPIX\t X \tNODE\tNODE\t0-31\t0\t\tN/A
GPU2\tNODE\tNODE\t X \tPIX\t0-31\t0\t\tN/A
GPU3\tNODE\tNODE\tPIX\t X \t0-31\t0\t\tN/A
";

#[test]
fn a_matrix_that_contradicts_itself_ends_in_a_located_error() {
    // each changed the written tree silently
    let f = scratch("asym.txt", &SMI.replacen("GPU1\tPIX", "GPU1\tSYS", 1));
    let e = fails(&["topo", "import", &f]);
    has(
        &e,
        &[
            &format!("{f}:3:1: "),
            "not symmetric: GPU1→GPU0 is SYS, but GPU0→GPU1 is PIX (line 2)",
        ],
    );
    let f = scratch(
        "extra.txt",
        &SMI.replacen(
            "GPU2\tNODE\tNODE\t X \tPIX\t",
            "GPU2\tNODE\tNODE\t X \tPIX\tPIX\t",
            1,
        ),
    );
    let e = fails(&["topo", "import", &f]);
    has(
        &e,
        &[
            &format!("{f}:4:1: "),
            "row GPU2 of the nvidia-smi matrix has 8 cells, its header (line 1) 7",
        ],
    );
    let f = scratch(
        "diag.txt",
        &SMI.replacen(
            "GPU3\tNODE\tNODE\tPIX\t X ",
            "GPU3\tNODE\tNODE\tPIX\tPIX",
            1,
        ),
    );
    let e = fails(&["topo", "import", &f]);
    has(
        &e,
        &[
            &format!("{f}:5:1: "),
            "cell GPU3→GPU3 is PIX: a GPU's own cell is `X`",
        ],
    );
}

#[test]
fn a_topology_without_host_memory_fails_validation() {
    let f = scratch(
        "no-memory.toml",
        "name = \"no memory\"\n[[node]]\nid = \"rc0\"\nkind = \"root_complex\"\n[[node]]\nid = \"gpu0\"\nkind = \"gpu\"\nsms = 132\nmemory_bandwidth_gbps = 4800\n[[link]]\na = \"gpu0\"\nb = \"rc0\"\nkind = \"pcie\"\ngen = 5\nwidth = 16\n",
    );
    let e = fails(&["topo", "validate", &f]);
    has(&e, &[&format!("{f}:6:"), "`gpu0` reaches no host memory"]);
}
