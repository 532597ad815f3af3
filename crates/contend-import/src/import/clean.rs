//! Tool output as users paste it: the lines that are not the tool's own
//! and are skipped (with the reason counted), and the prefixes launchers
//! put in front of the tool's lines.
//!
//! One rule for every importer: a line is the tool's after
//! [`strip_launcher`] removes an `mpirun --tag-output` tag (`[1,0]<stdout>:`)
//! or an `srun -l` label (`3: `); it is noise when [`noise`] names it: a
//! markdown fence, a shell prompt (the command is kept: it says which test
//! ran and with which flags), NCCL's `INFO`/`WARN` lines, Open MPI / ORTE /
//! PRRTE messages (`[host:pid] 7 more processes have sent help message
//! ...`, `Set MCA parameter ...`, the dashed banners around warnings).

/// Why a line was skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Noise {
    Blank,
    /// ```` ``` ```` (with or without a language).
    Fence,
    /// A shell prompt and the command after it.
    Prompt,
    /// `NCCL INFO`, `NCCL WARN` and `NCCL version` lines.
    Nccl,
    /// Open MPI, ORTE, PRRTE, Slurm and ssh messages.
    Launcher,
}

impl Noise {
    pub fn describe(self) -> &'static str {
        match self {
            Noise::Blank => "blank line",
            Noise::Fence => "markdown fence",
            Noise::Prompt => "shell prompt and command",
            Noise::Nccl => "NCCL INFO/WARN line",
            Noise::Launcher => "mpirun/ORTE/Slurm message",
        }
    }
}

/// The line without a launcher's tag: `[1,0]<stdout>:` (mpirun
/// `--tag-output`), `[1,0]:` , `3: ` (`srun -l`), `rank3]: ` (torchrun).
pub fn strip_launcher(line: &str) -> &str {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('[')
        && let Some(close) = rest.find(']')
    {
        let tag = &rest[..close];
        let after = &rest[close + 1..];
        let is_rank_tag = !tag.is_empty() && tag.chars().all(|c| c.is_ascii_digit() || c == ',');
        if is_rank_tag {
            let after = after
                .strip_prefix("<stdout>")
                .or_else(|| after.strip_prefix("<stderr>"))
                .unwrap_or(after);
            if let Some(a) = after.strip_prefix(':') {
                return a;
            }
        }
    }
    // `srun -l`: digits, a colon, a space
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && digits <= 5 && t[digits..].starts_with(": ") {
        return &t[digits + 2..];
    }
    line
}

/// The command of a shell-prompt line (`user@host:~/dir$ ./all_reduce_perf
/// -b 8`, `$ mpirun ...`, `(venv) root@box:/# nvidia-smi topo -m`).
pub fn prompt_command(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for lead in ["$ ", "> ", "% "] {
        if let Some(c) = t.strip_prefix(lead) {
            return Some(c.trim());
        }
    }
    // an optional `(env) ` then `user@host:path$ ` or `user@host:path# `
    let t = match t.strip_prefix('(') {
        Some(r) => r.split_once(") ").map_or(t, |x| x.1),
        None => t,
    };
    let at = t.find('@')?;
    let user = &t[..at];
    if user.is_empty()
        || !user
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.".contains(c))
    {
        return None;
    }
    let rest = &t[at + 1..];
    let colon = rest.find(':')?;
    let host = &rest[..colon];
    if host.is_empty()
        || !host
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.".contains(c))
    {
        return None;
    }
    let after = &rest[colon + 1..];
    let end = after.find(['$', '#'])?;
    let path = &after[..end];
    if path.contains(char::is_whitespace) {
        return None;
    }
    let cmd = after[end + 1..]
        .strip_prefix(' ')
        .unwrap_or(&after[end + 1..]);
    Some(cmd.trim())
}

/// Whether the line is noise, and which.
pub fn noise(line: &str) -> Option<Noise> {
    let t = line.trim();
    if t.is_empty() {
        return Some(Noise::Blank);
    }
    if t.starts_with("```") || t.starts_with("~~~") {
        return Some(Noise::Fence);
    }
    if t.contains("NCCL INFO") || t.contains("NCCL WARN") || t.starts_with("NCCL version") {
        return Some(Noise::Nccl);
    }
    if is_launcher(t) {
        return Some(Noise::Launcher);
    }
    if prompt_command(t).is_some() {
        return Some(Noise::Prompt);
    }
    None
}

fn is_launcher(t: &str) -> bool {
    // `[host:12345] ...` (ORTE/PRRTE help aggregation, MCA messages)
    if let Some(rest) = t.strip_prefix('[')
        && let Some(close) = rest.find(']')
    {
        let tag = &rest[..close];
        if let Some((host, pid)) = tag.rsplit_once(':')
            && !host.is_empty()
            && !pid.is_empty()
            && pid.chars().all(|c| c.is_ascii_digit())
        {
            return true;
        }
    }
    const SAYINGS: [&str; 12] = [
        "more processes have sent help message",
        "more process has sent help message",
        "Set MCA parameter",
        "orte_base_help_aggregate",
        "prte_base_help_aggregate",
        "mpirun noticed",
        "Warning: Permanently added",
        "srun: ",
        "slurmstepd: ",
        "WARNING: There was an error initializing an OpenFabrics device",
        "Local host:",
        "Local device:",
    ];
    if SAYINGS.iter().any(|s| t.contains(s)) {
        return true;
    }
    // Open MPI's banners: a line of dashes
    t.len() >= 20 && t.chars().all(|c| c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_tags_and_labels_are_stripped() {
        assert_eq!(strip_launcher("[1,0]<stdout>:#  Rank  0"), "#  Rank  0");
        assert_eq!(strip_launcher("[1,3]<stderr>:x"), "x");
        assert_eq!(strip_launcher("3:         1024  256"), "        1024  256");
        assert_eq!(strip_launcher("        1024  256"), "        1024  256");
        // a bus id in brackets is not a tag
        assert_eq!(
            strip_launcher("#  Rank  0 Group  0 Pid 1 on h device  0 [0x06] NVIDIA H200"),
            "#  Rank  0 Group  0 Pid 1 on h device  0 [0x06] NVIDIA H200"
        );
    }

    #[test]
    fn prompts_keep_their_command() {
        assert_eq!(
            prompt_command("tiny@tiny14:~/build/nccl-tests/build$ ./all_reduce_perf -g 6"),
            Some("./all_reduce_perf -g 6")
        );
        assert_eq!(
            prompt_command("$ nvidia-smi topo -m"),
            Some("nvidia-smi topo -m")
        );
        assert_eq!(
            prompt_command("(base) root@gpu-01:/workspace# mpirun -np 8 ./build/all_reduce_perf"),
            Some("mpirun -np 8 ./build/all_reduce_perf")
        );
        // nccl-tests' own comment lines are not prompts
        assert_eq!(prompt_command("# nThread 1 nGpus 8 minBytes 8"), None);
        assert_eq!(
            prompt_command(
                "#  Rank  0 Group  0 Pid   6899 on ztan-mig-235z device  0 [0000:04:00] NVIDIA H100"
            ),
            None
        );
    }

    #[test]
    fn noise_is_named() {
        assert_eq!(noise("```text"), Some(Noise::Fence));
        assert_eq!(
            noise("gpu01:1234:1250 [0] NCCL INFO Channel 00/02 :    0   1"),
            Some(Noise::Nccl)
        );
        assert_eq!(
            noise(
                "[gpu01:12345] 7 more processes have sent help message help-mpi-btl-openib.txt / no active ports found"
            ),
            Some(Noise::Launcher)
        );
        assert_eq!(
            noise("--------------------------------------------------------------------------"),
            Some(Noise::Launcher)
        );
        assert_eq!(
            noise("        1024           256     float     sum      -1"),
            None
        );
        assert_eq!(noise("# Out of bounds values : 0 OK"), None);
    }
}
