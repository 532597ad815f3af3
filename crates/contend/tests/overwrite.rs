//! No command overwrites a file unless asked: an `--out` that exists is
//! refused, naming the file and `--force`, before any work is done, and is
//! left as it was.

use std::path::PathBuf;

mod common;
use common::{contend, root};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("contend-overwrite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `file` as the command line names it (relative to the repository, or absolute).
fn refused(args: &[&str], file: &str) {
    let shown = file;
    let file = &root().join(file);
    let before = std::fs::read(file).unwrap();
    let (ok, out, err) = contend(args);
    assert!(!ok, "{args:?} overwrote {}: {out}{err}", file.display());
    assert!(
        err.contains(&format!("{shown} exists")) && err.contains("--force"),
        "{args:?}: {err}"
    );
    assert_eq!(
        std::fs::read(file).unwrap(),
        before,
        "{args:?} changed {}",
        file.display()
    );
}

#[test]
fn calibrate_refuses_a_folder_holding_a_calibration_unless_forced() {
    // the tracked report, as the README's command used to write it
    let tracked = "calibration/h200x2/report";
    refused(
        &[
            "calibrate",
            "calibration/h200x2/probe.jsonl",
            "--topology",
            "topologies/h200-2x.toml",
            "--out",
            tracked,
        ],
        &format!("{tracked}/params.toml"),
    );
    // a public rig's own folder is the default --out
    let rig = "calibration/public/genoad24qm32-pm50100-16gpu";
    refused(
        &["calibrate", "--public", rig],
        &format!("{rig}/params.toml"),
    );
    // a folder with only fit.json is refused too, and --force writes
    let d = scratch("cal");
    std::fs::write(d.join("fit.json"), "{}").unwrap();
    let ds = d.display().to_string();
    let args = [
        "calibrate",
        "calibration/h200x2/probe.jsonl",
        "--topology",
        "topologies/h200-2x.toml",
        "--max-iters",
        "1",
        "--bootstrap",
        "0",
        "--tlp-checks",
        "0",
        "--out",
        &ds,
    ];
    refused(&args, &format!("{ds}/fit.json"));
    let forced: Vec<&str> = args.iter().copied().chain(["--force"]).collect();
    let (ok, _, err) = contend(&forced);
    assert!(ok, "{err}");
    assert!(std::fs::read_to_string(d.join("fit.json")).unwrap().len() > 2);
    assert!(d.join("params.toml").exists());
    std::fs::remove_dir_all(&d).unwrap();

    // a rig fitted into --out once; a second time only with --force
    let d = scratch("rig");
    let ds = d.display().to_string();
    let args = [
        "calibrate",
        "--public",
        rig,
        "--out",
        &ds,
        "--bootstrap",
        "0",
        "--max-iters",
        "5",
    ];
    let (ok, _, err) = contend(&args);
    assert!(ok, "{err}");
    refused(
        &args,
        &format!("{ds}/genoad24qm32-pm50100-16gpu/params.toml"),
    );
    let forced: Vec<&str> = args.iter().copied().chain(["--force"]).collect();
    let (ok, _, err) = contend(&forced);
    assert!(ok, "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn single_file_writers_refuse_an_existing_out_unless_forced() {
    let d = scratch("files");
    let f = d.join("existing.txt");
    std::fs::write(&f, "keep me\n").unwrap();
    let fs = f.display().to_string();
    let box_ = "tests/fixtures/real/machines/stelline-asus-esc8000a-e12.md";
    refused(&["topo", "import", box_, "--out", &fs], &fs);
    refused(&["import", box_, "--out", &fs], &fs);
    refused(
        &[
            "advise",
            "--topology",
            "pro6000-4x-1socket",
            "--to",
            "8KiB",
            "--emit",
            "vllm",
            "--out",
            &fs,
        ],
        &fs,
    );
    // a chart is refused before the sweep or the advice runs
    refused(
        &[
            "sweep",
            "--topology",
            "pro6000-4x-1socket",
            "--sizes",
            "4KiB",
            "--plot",
            &fs,
        ],
        &fs,
    );
    refused(
        &[
            "advise",
            "--topology",
            "pro6000-4x-1socket",
            "--to",
            "8KiB",
            "--plot",
            &fs,
        ],
        &fs,
    );
    // before the GPU is looked for
    refused(&["hw", "topo", "--out", &fs], &fs);
    refused(&["hw", "probe", "--out", &fs], &fs);
    refused(
        &[
            "hw",
            "run",
            "scenarios/hw-allreduce.toml",
            "--topology",
            "live",
            "--out",
            &fs,
        ],
        &fs,
    );
    let (ok, _, err) = contend(&["import", box_, "--out", &fs, "--force"]);
    assert!(ok, "{err}");
    assert_ne!(std::fs::read_to_string(&f).unwrap(), "keep me\n");
    // --force overwrites a chart
    for args in [
        &[
            "sweep",
            "--topology",
            "pro6000-4x-1socket",
            "--sizes",
            "4KiB",
        ][..],
        &["advise", "--topology", "pro6000-4x-1socket", "--to", "8KiB"][..],
    ] {
        std::fs::write(&f, "keep me\n").unwrap();
        let forced: Vec<&str> = args
            .iter()
            .copied()
            .chain(["--plot", &fs, "--force"])
            .collect();
        let (ok, _, err) = contend(&forced);
        assert!(ok, "{forced:?}: {err}");
        assert!(
            std::fs::read_to_string(&f).unwrap().starts_with("<svg"),
            "{forced:?}"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}
