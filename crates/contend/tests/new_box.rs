//! A new user's journey with their own box and step: the composed 8x RTX
//! 5090 paste (`tests/fixtures/box/`) through `topo import` and `simulate`,
//! and one's own step on the command line over every shipped scenario.

mod common;
use common::{contend, root};

/// A scratch file under the target directory.
fn scratch(name: &str) -> String {
    let d = root().join("target/tmp/new-box");
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    let _ = std::fs::remove_file(&p);
    p.display().to_string()
}

fn imported_box() -> String {
    let out = scratch("rtx5090-8x.toml");
    let (ok, _, err) = contend(&[
        "topo",
        "import",
        "tests/fixtures/box/rtx5090-8x-2socket.txt",
        "--out",
        &out,
    ]);
    assert!(ok, "{err}");
    // the paste names the model (nvidia-smi -L) and its peer access
    assert!(err.contains("nvidia-smi -L (8 GPUs)"), "{err}");
    assert!(err.contains("`[p2p]`"), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("model = \"NVIDIA GeForce RTX 5090\""),
        "{text}"
    );
    assert!(text.contains("[p2p]\naccess = \"none\""), "{text}");
    out
}

/// A short step (2 layers) at flow fidelity with `extra` flags: what it
/// printed (it must succeed).
fn short_step(extra: &[&str]) -> String {
    let mut args = vec!["simulate", "--fidelity", "flow", "--layers", "2"];
    args.extend(extra);
    let (ok, out, err) = contend(&args);
    assert!(ok, "{args:?}: {err}");
    out
}

#[test]
fn on_a_box_without_p2p_no_p2p_kernel_runs_and_the_output_says_why() {
    let topo = imported_box();
    let out = short_step(&["--topology", &topo, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["no_p2p"].as_array().unwrap().len(), 28);
    assert!(
        v["no_p2p_note"]
            .as_str()
            .unwrap()
            .contains("nvidia-smi topo -p2p r")
    );
    for r in v["results"].as_array().unwrap() {
        // every kernel with its buffers in host memory (NCCL places its
        // own, through SHM below)
        if r["algorithm"] != "nccl" {
            assert_eq!(r["placement"], "host", "{}", r["algorithm"]);
        }
    }
    let nccl = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["algorithm"] == "nccl")
        .unwrap();
    let line = nccl.to_string();
    assert!(
        line.contains("SHM") && !line.contains("P2P write"),
        "{line}"
    );
    // and the table says so up front
    let out = short_step(&["--topology", &topo]);
    assert!(
        out.contains("p2p       no P2P between any pair of GPUs"),
        "{out}"
    );
    assert!(
        out.contains("placement host") && !out.contains("placement peer"),
        "{out}"
    );
    // NCCL_P2P_DISABLE=1 on a box with P2P is read the same way
    let out = short_step(&["--nccl-env", "NCCL_P2P_DISABLE=1"]);
    assert!(out.contains("NCCL_P2P_DISABLE=1 is set"), "{out}");
    assert!(!out.contains("placement peer"), "{out}");
}

/// `--hidden 6144 --tokens 4 --ranks 4 --launch graph` over every shipped
/// scenario and the embedded one: the step runs as asked (on a 2-GPU box
/// `--ranks 4` is refused, naming the flag, and `--ranks 2` runs).
#[test]
fn ones_own_step_runs_over_every_scenario() {
    let mut names: Vec<String> = std::fs::read_dir(root().join("scenarios"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| format!("scenarios/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    names.sort();
    assert!(names.len() > 10);
    names.push(String::new());
    for sc in &names {
        let mut args: Vec<&str> = vec!["simulate"];
        if !sc.is_empty() {
            args.push(sc);
        }
        args.extend([
            "--hidden",
            "6144",
            "--tokens",
            "4",
            "--launch",
            "graph",
            "--layers",
            "2",
            "--fidelity",
            "flow",
        ]);
        let mut four = args.clone();
        four.extend(["--ranks", "4"]);
        let (ok, out, err) = contend(&four);
        let ranks = if ok {
            4
        } else {
            assert!(
                err.contains("--ranks: 4 ranks: an allreduce needs 2 to 2 here"),
                "{sc}: {err}"
            );
            let mut two = args.clone();
            two.extend(["--ranks", "2"]);
            let (ok, out, err) = contend(&two);
            assert!(ok, "{sc} --ranks 2: {err}");
            check(sc, &out, 2);
            continue;
        };
        check(sc, &out, ranks);
    }
}

fn check(sc: &str, out: &str, ranks: usize) {
    assert!(out.contains(&format!("({ranks} ranks:")), "{sc}: {out}");
    // the scenario's own dtype is kept (fp32 where it says so)
    assert!(
        out.contains("4 allreduces (2 layers x 2) of 49152 (6144 x 4 x bf16)")
            || out.contains("4 allreduces (2 layers x 2) of 98304 (6144 x 4 x fp32)"),
        "{sc}: {out}"
    );
    assert!(out.contains("launch graph"), "{sc}: {out}");
    assert!(out.contains("winner:"), "{sc}: {out}");
}
