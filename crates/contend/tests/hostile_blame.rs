//! The hostile-input issue's errors in the wrong place: a topology whose
//! GPUs lack `model` was blamed on the embedded default scenario's line 10
//! (its `nccl` field) and told the user to pass `--cc`, a flag `simulate`
//! and `sweep` do not have. Errors now name the user's own file, line and
//! field, and every flag an error suggests is one the command has.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn contend(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The shipped 2-socket topology with every `model = ...` line removed,
/// and the line of the first GPU's `id`.
fn without_models() -> (String, usize) {
    let text = std::fs::read_to_string(root().join("topologies/pro6000-8x-2socket.toml")).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("model"))
        .collect();
    let line = kept.iter().position(|l| *l == "id = \"gpu0\"").unwrap() + 1;
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-blame");
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("no-models.toml");
    std::fs::write(&p, kept.join("\n")).unwrap();
    (p.display().to_string(), line)
}

/// Each `--flag` an error mentions is listed by `contend <cmd> --help`.
fn flags_exist(cmd: &[&str], err: &str) {
    let mut help_args = cmd.to_vec();
    help_args.push("--help");
    let out = Command::new(env!("CARGO_BIN_EXE_contend"))
        .args(&help_args)
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for (i, _) in err.match_indices("--") {
        let flag: String = err[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if flag.len() > 2 {
            assert!(
                help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                "`contend {}` suggests {flag}, which it does not have: {err}",
                cmd.join(" ")
            );
        }
    }
}

#[test]
fn a_gpu_without_a_model_is_blamed_on_the_users_topology() {
    let (topo, line) = without_models();
    for cmd in [["simulate"], ["sweep"]] {
        let mut args = cmd.to_vec();
        args.extend(["--topology", &topo]);
        let (code, err) = contend(&args);
        assert_eq!(code, Some(1), "{err}");
        assert!(
            err.contains(&format!("{topo}:{line}:")) && err.contains("(field `model`)"),
            "the error should point at gpu0 in {topo} (line {line}): {err}"
        );
        assert!(err.contains("gpu0"), "{err}");
        assert!(
            !err.contains("default scenario") && !err.contains("eagle3"),
            "the default scenario is not at fault: {err}"
        );
        flags_exist(&cmd, &err);
        assert!(!err.contains("--cc"), "{err}");
        // said once, not repeated as its own cause
        assert_eq!(err.matches("compute capability").count(), 1, "{err}");
    }
    // `nccl explain` has --cc, and says so
    let (code, err) = contend(&["nccl", "explain", &topo]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(&topo) && err.contains("--cc"), "{err}");
    flags_exist(&["nccl", "explain"], &err);
}
