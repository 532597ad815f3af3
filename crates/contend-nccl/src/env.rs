//! The environment NCCL reads: `NCCL_*` variables parsed once into a
//! validated [`NcclEnv`] (names and accepted values follow `ncclGetLevel`
//! in `src/graph/paths.cc`, `parseList` in `src/graph/tuning.cc`,
//! `ncclMin/MaxNchannels` in `src/graph/connect.cc`, `computeBuffSizes` in
//! `src/init.cc`, all at v2.28.9-1, unchanged at v2.27.7-1 and v2.29.7-1),
//! and the machine facts NCCL reads from CPUID and NVML that a contend
//! topology does not carry ([`HostFacts`]).

use crate::error::{
    EnableListError, EnvError, EnvProblem, P2pLevelError, P2pLevelHint, UnknownCpu,
};
use crate::paths::PathType;
use crate::tuning::{Algorithm, Protocol};
use contend_topo::{Bytes, LinkKind, Topology};
use serde::Serialize;
use std::fmt;

/// The functions `NCCL_ALGO`/`NCCL_PROTO` may name before a colon
/// (`ncclFuncStr`, `src/init.cc` v2.28.9-1).
pub const FUNCTIONS: [&str; 5] = [
    "Broadcast",
    "Reduce",
    "AllGather",
    "ReduceScatter",
    "AllReduce",
];
/// Index of AllReduce in [`FUNCTIONS`].
pub(crate) const ALLREDUCE: usize = 4;

/// A value of `NCCL_P2P_LEVEL`: the farthest path type P2P may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct P2pLevel {
    pub level: PathType,
    /// How it was written (`PXB`, or the old integer `2`).
    pub written: P2pLevelSpelling,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum P2pLevelSpelling {
    Name,
    /// The pre-2.4 integers 0–5 (`levelsOldToNew`, `src/graph/paths.cc`):
    /// 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS.
    OldInteger(u32),
}

impl P2pLevel {
    /// Parses a value as NCCL does: an exact, case-sensitive type name from
    /// LOC to SYS, or an integer in the old numbering. NCCL silently ignores
    /// anything else (keeping its default); here that is an error, so a
    /// misspelt level is never mistaken for the default.
    pub fn parse(value: &str) -> Result<P2pLevel, P2pLevelError> {
        if let Some(t) = PathType::from_name(value)
            && t <= PathType::Sys
        {
            return Ok(P2pLevel {
                level: t,
                written: P2pLevelSpelling::Name,
            });
        }
        if value.starts_with(|c: char| c.is_ascii_digit()) {
            let digits: String = value.chars().take_while(|c| c.is_ascii_digit()).collect();
            let old: u32 = digits
                .parse()
                .map_err(|_| P2pLevelError::IntegerOutOfRange)?;
            const OLD_TO_NEW: [PathType; 6] = [
                PathType::Loc,
                PathType::Pix,
                PathType::Pxb,
                PathType::Phb,
                PathType::Sys,
                PathType::Sys,
            ];
            return Ok(P2pLevel {
                level: OLD_TO_NEW[(old as usize).min(5)],
                written: P2pLevelSpelling::OldInteger(old),
            });
        }
        let hint = match value.to_ascii_uppercase().as_str() {
            "NODE" => P2pLevelHint::Node,
            up if PathType::from_name(up).is_some() => P2pLevelHint::Case(up.to_string()),
            _ => P2pLevelHint::None,
        };
        Err(P2pLevelError::Unknown {
            value: value.to_string(),
            hint,
        })
    }
}

/// Per-function enable table of `NCCL_ALGO` or `NCCL_PROTO` after
/// `parseList` (`src/graph/tuning.cc` v2.28.9-1): 0 off, 1 on, 2 "NCCL
/// decides" (LL128's default).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnableList {
    /// The text as given.
    pub text: String,
    /// `[function][element]`.
    pub table: Vec<Vec<u8>>,
}

impl EnableList {
    fn parse(text: &str, elems: &[&str], default: &[u8]) -> Result<EnableList, EnableListError> {
        let mut table = vec![default.to_vec(); FUNCTIONS.len()];
        for (i, token) in text.split(';').filter(|t| !t.is_empty()).enumerate() {
            let (prefix, list) = match token.split_once(':') {
                Some((p, l)) => (Some(p), l),
                None if i == 0 => (None, token),
                None => {
                    return Err(EnableListError::NoFunctionPrefix {
                        token: token.to_string(),
                    });
                }
            };
            let (unset, set, list) = match list.strip_prefix('^') {
                Some(rest) => (1, 0, rest),
                None => (0, 1, list),
            };
            let mut matched = false;
            for (f, fname) in FUNCTIONS.iter().enumerate() {
                if let Some(p) = prefix
                    && !p.eq_ignore_ascii_case(fname)
                {
                    continue;
                }
                matched = true;
                table[f].iter_mut().for_each(|v| *v = unset);
                for e in list.split(',').filter(|e| !e.is_empty()) {
                    let Some(ix) = elems.iter().position(|x| x.eq_ignore_ascii_case(e)) else {
                        return Err(EnableListError::UnknownElement {
                            element: e.to_string(),
                            known: elems.iter().map(|x| x.to_string()).collect(),
                        });
                    };
                    table[f][ix] = set;
                }
            }
            if !matched {
                return Err(EnableListError::UnknownFunction {
                    function: prefix.unwrap_or_default().to_string(),
                });
            }
        }
        Ok(EnableList {
            text: text.to_string(),
            table,
        })
    }
}

/// The CPU as NCCL classifies it (`ncclTopoAddCpu`, `src/graph/topo.cc`
/// v2.28.9-1): architecture, vendor, and for Intel the model class from
/// CPUID family 6 model (≥0xCF Emerald Rapids, ≥0x8F Sapphire Rapids — so
/// Granite Rapids 0xAD counts as Sapphire Rapids — ≥0x55 Skylake, which
/// includes Cascade Lake and Ice Lake-SP, else Broadwell).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum CpuArch {
    IntelBroadwell,
    IntelSkylake,
    IntelSapphireRapids,
    IntelEmeraldRapids,
    Amd,
    Zhaoxin,
    ZhaoxinYongfeng,
    Power,
    Arm,
}

impl CpuArch {
    /// Names accepted on a command line or in a scenario.
    pub const NAMES: [(&'static str, CpuArch); 9] = [
        ("intel-bdw", CpuArch::IntelBroadwell),
        ("intel-skl", CpuArch::IntelSkylake),
        ("intel-srp", CpuArch::IntelSapphireRapids),
        ("intel-erp", CpuArch::IntelEmeraldRapids),
        ("amd", CpuArch::Amd),
        ("zhaoxin", CpuArch::Zhaoxin),
        ("zhaoxin-yongfeng", CpuArch::ZhaoxinYongfeng),
        ("power", CpuArch::Power),
        ("arm", CpuArch::Arm),
    ];

    pub fn parse(s: &str) -> Result<CpuArch, UnknownCpu> {
        CpuArch::NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, c)| *c)
            .ok_or_else(|| UnknownCpu {
                name: s.to_string(),
            })
    }

    pub fn name(self) -> &'static str {
        CpuArch::NAMES
            .iter()
            .find(|(_, c)| *c == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    pub fn is_x86(self) -> bool {
        !matches!(self, CpuArch::Power | CpuArch::Arm)
    }
    pub fn is_intel(self) -> bool {
        matches!(
            self,
            CpuArch::IntelBroadwell
                | CpuArch::IntelSkylake
                | CpuArch::IntelSapphireRapids
                | CpuArch::IntelEmeraldRapids
        )
    }
    pub fn is_amd(self) -> bool {
        self == CpuArch::Amd
    }

    /// NCCL's `(arch/vendor/model)` integers as its topology dump prints
    /// them (`NCCL_TOPO_CPU_*`, `src/include/graph.h` v2.28.9-1); model is
    /// printed as left by the loader, 0 where NCCL does not set one.
    pub fn nccl_codes(self) -> (u8, u8, i8) {
        match self {
            CpuArch::IntelBroadwell => (1, 1, 1),
            CpuArch::IntelSkylake => (1, 1, 2),
            CpuArch::IntelSapphireRapids => (1, 1, 3),
            CpuArch::IntelEmeraldRapids => (1, 1, 4),
            CpuArch::Amd => (1, 2, 0),
            CpuArch::Zhaoxin => (1, 3, 0),
            CpuArch::ZhaoxinYongfeng => (1, 3, 1),
            CpuArch::Power => (2, 0, 0),
            CpuArch::Arm => (3, 0, 0),
        }
    }

    /// The default when none is given: from the protocol of the topology's
    /// CPU-to-CPU links (`UPI`/`QPI`: Intel, Skylake class, the oldest
    /// class with UPI; `xGMI`/`Infinity Fabric`: AMD); with no such link,
    /// AMD (the platform of the shipped RTX PRO 6000 topologies).
    pub fn infer(topo: &Topology) -> (CpuArch, &'static str) {
        for l in topo.links() {
            if let LinkKind::Cpu { protocol, .. } = &l.kind {
                // `topo import` writes a placeholder link where no input
                // names the CPU: then the protocol is a guess, said as one
                let guessed = l.note.as_deref().is_some_and(|n| n.contains("placeholder"));
                let p = protocol.to_ascii_lowercase();
                if p.contains("upi") || p.contains("qpi") {
                    return (
                        CpuArch::IntelSkylake,
                        if guessed {
                            "GUESSED: Intel, Skylake class, from a placeholder UPI CPU link (no input named the CPU): pass --cpu"
                        } else {
                            "inferred from the UPI/QPI CPU link: Intel, Skylake class"
                        },
                    );
                }
                if p.contains("xgmi") || p.contains("infinity") {
                    return (
                        CpuArch::Amd,
                        if guessed {
                            "GUESSED: AMD, from a placeholder xGMI CPU link (no input named the CPU): pass --cpu"
                        } else {
                            "inferred from the xGMI CPU link: AMD"
                        },
                    );
                }
            }
        }
        (
            CpuArch::Amd,
            "default (no CPU link says otherwise): AMD x86",
        )
    }
}

impl fmt::Display for CpuArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the driver allows GPU P2P between the ranks' GPUs, as NVML's
/// P2P status and `cudaDeviceCanAccessPeer` report it (`ncclTopoCheckP2p`,
/// `src/graph/paths.cc`; `p2pCanConnect`, `src/transport/p2p.cc`).
/// GeForce drivers report it unsupported on PCIe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum GpuP2p {
    #[default]
    Supported,
    NotSupported,
}

/// How the ranks are spread over processes: NCCL names the P2P mechanism by
/// it (`P2P/direct pointer` inside one process, else `P2P/CUMEM` or
/// `P2P/IPC`; `p2pSendSetup`, `src/transport/p2p.cc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum ProcessModel {
    /// One process drives every GPU (nccl-tests `-g N`, `contend hw`).
    #[default]
    OneProcess,
    /// One process per rank (torchrun, vLLM, nccl-tests under MPI).
    ProcessPerRank,
}

/// What NCCL reads from the machine rather than the environment, which a
/// contend topology does not say. Every field has a stated default.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostFacts {
    /// `None`: [`CpuArch::infer`].
    pub cpu: Option<CpuArch>,
    /// CUDA compute capability ×10 (`90` for H200). `None`: from the GPU
    /// model name ([`crate::system::compute_capability_of`]).
    pub compute_capability: Option<u32>,
    pub gpu_p2p: GpuP2p,
    pub processes: ProcessModel,
    /// NVLinks per GPU pair. `None`: the topology's NVLink bandwidth over
    /// NCCL's per-link figure for the architecture, rounded.
    pub nvlink_links: Option<u32>,
}

/// `NCCL_*` variables, validated. Build with [`NcclEnv::from_pairs`];
/// [`NcclEnv::default`] is an empty environment.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NcclEnv {
    pub p2p_level: Option<P2pLevel>,
    /// `NCCL_P2P_DISABLE=1` (any other integer leaves P2P alone, as in NCCL).
    pub p2p_disable: bool,
    /// `NCCL_SHM_DISABLE=1`.
    pub shm_disable: bool,
    pub min_nchannels: Option<i64>,
    pub max_nchannels: Option<i64>,
    /// `NCCL_MIN_CTAS` / `NCCL_MAX_CTAS` (communicator config).
    pub min_ctas: Option<i64>,
    pub max_ctas: Option<i64>,
    pub algo: Option<EnableList>,
    pub proto: Option<EnableList>,
    /// `NCCL_BUFFSIZE`: the Simple protocol's buffer per connection.
    pub buffsize: Option<Bytes>,
    pub ll_buffsize: Option<Bytes>,
    pub ll128_buffsize: Option<Bytes>,
    pub nthreads: Option<i64>,
    pub ll128_nthreads: Option<i64>,
    /// `NCCL_GRAPH_FILE`: rings and trees read from an XML graph.
    pub graph_file: Option<String>,
    /// `NCCL_P2P_READ_ENABLE`.
    pub p2p_read_enable: Option<bool>,
    /// `NCCL_P2P_DIRECT_DISABLE=1`.
    pub p2p_direct_disable: bool,
    /// `NCCL_CUMEM_ENABLE`; `None`: on (the default with CUDA 12.2+ drivers).
    pub cumem_enable: Option<bool>,
    /// `NCCL_NVB_DISABLE=1`.
    pub nvb_disable: bool,
    /// Machine facts NCCL reads itself (not variables).
    pub host: HostFacts,
    /// `NCCL_*` variables given that this crate does not model, kept so
    /// `explain` can say so.
    pub unreplicated: Vec<(String, String)>,
}

/// The variables the replica models: what a scenario's `[nccl]` table and
/// `contend simulate --nccl-env` accept (NCCL itself ignores names it does
/// not know, so a misspelt one there would silently do nothing; here it is
/// an error). [`NcclEnv::set`] handles each of them.
pub const MODELLED: [&str; 20] = [
    "NCCL_P2P_LEVEL",
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_MIN_NRINGS",
    "NCCL_MAX_NRINGS",
    "NCCL_MIN_CTAS",
    "NCCL_MAX_CTAS",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_BUFFSIZE",
    "NCCL_LL_BUFFSIZE",
    "NCCL_LL128_BUFFSIZE",
    "NCCL_NTHREADS",
    "NCCL_LL128_NTHREADS",
    "NCCL_GRAPH_FILE",
    "NCCL_P2P_READ_ENABLE",
    "NCCL_P2P_DIRECT_DISABLE",
    "NCCL_CUMEM_ENABLE",
];

fn int(name: &str, v: &str) -> Result<i64, EnvError> {
    let t = v.trim();
    let parsed = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else {
        t.parse::<i64>().ok()
    };
    parsed.ok_or_else(|| EnvError::new(name, v, EnvProblem::NotAnInteger))
}

fn bytes(name: &str, v: &str) -> Result<Bytes, EnvError> {
    let n = int(name, v)?;
    if n <= 0 {
        return Err(EnvError::new(name, v, EnvProblem::NotPositiveBytes));
    }
    Ok(Bytes(n as u64))
}

fn flag(name: &str, v: &str) -> Result<bool, EnvError> {
    Ok(int(name, v)? == 1)
}

impl NcclEnv {
    /// Parses `NCCL_*` variables (`NAME`, `value`). A malformed value is an
    /// error naming the variable; a name that is not `NCCL_*` is an error;
    /// an `NCCL_*` name this crate does not model is kept in
    /// [`NcclEnv::unreplicated`].
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<NcclEnv, EnvError> {
        let mut e = NcclEnv::default();
        for (k, v) in pairs {
            e.set(k.as_ref(), v.as_ref())?;
        }
        Ok(e)
    }

    /// Parses `NAME=value` strings (a command line's `--env`).
    pub fn from_assignments<S: AsRef<str>>(
        items: impl IntoIterator<Item = S>,
    ) -> Result<NcclEnv, EnvError> {
        let mut e = NcclEnv::default();
        for item in items {
            let item = item.as_ref();
            let Some((k, v)) = item.split_once('=') else {
                return Err(EnvError::new(item, "", EnvProblem::NotAnAssignment));
            };
            e.set(k.trim(), v)?;
        }
        Ok(e)
    }

    /// Sets one of the variables the replica models ([`MODELLED`], plus
    /// `NCCL_NVB_DISABLE`); any other name is an error naming them.
    pub fn set_modelled(&mut self, name: &str, v: &str) -> Result<(), EnvError> {
        if !MODELLED.contains(&name) && name != "NCCL_NVB_DISABLE" {
            return Err(EnvError::new(name, v, EnvProblem::NotModelled));
        }
        self.set(name, v)
    }

    /// Sets one variable.
    pub fn set(&mut self, name: &str, v: &str) -> Result<(), EnvError> {
        let algos: Vec<&str> = Algorithm::ALL.iter().map(|a| a.nccl_name()).collect();
        let protos: Vec<&str> = Protocol::ALL.iter().map(|p| p.nccl_name()).collect();
        match name {
            "NCCL_P2P_LEVEL" => {
                self.p2p_level = Some(P2pLevel::parse(v).map_err(|m| EnvError::new(name, v, m))?)
            }
            "NCCL_P2P_DISABLE" => self.p2p_disable = flag(name, v)?,
            "NCCL_SHM_DISABLE" => self.shm_disable = flag(name, v)?,
            "NCCL_MIN_NCHANNELS" | "NCCL_MIN_NRINGS" => self.min_nchannels = Some(int(name, v)?),
            "NCCL_MAX_NCHANNELS" | "NCCL_MAX_NRINGS" => self.max_nchannels = Some(int(name, v)?),
            "NCCL_MIN_CTAS" => self.min_ctas = Some(int(name, v)?),
            "NCCL_MAX_CTAS" => self.max_ctas = Some(int(name, v)?),
            "NCCL_ALGO" => {
                self.algo = Some(
                    EnableList::parse(v, &algos, &[1; 7]).map_err(|m| EnvError::new(name, v, m))?,
                )
            }
            "NCCL_PROTO" => {
                self.proto = Some(
                    EnableList::parse(v, &protos, &[1, 2, 1])
                        .map_err(|m| EnvError::new(name, v, m))?,
                )
            }
            "NCCL_BUFFSIZE" => self.buffsize = Some(bytes(name, v)?),
            "NCCL_LL_BUFFSIZE" => self.ll_buffsize = Some(bytes(name, v)?),
            "NCCL_LL128_BUFFSIZE" => self.ll128_buffsize = Some(bytes(name, v)?),
            "NCCL_NTHREADS" => self.nthreads = Some(int(name, v)?),
            "NCCL_LL128_NTHREADS" => self.ll128_nthreads = Some(int(name, v)?),
            "NCCL_GRAPH_FILE" => {
                if v.trim().is_empty() {
                    return Err(EnvError::new(name, v, EnvProblem::NoFile));
                }
                self.graph_file = Some(v.to_string())
            }
            "NCCL_P2P_READ_ENABLE" => self.p2p_read_enable = Some(int(name, v)? != 0),
            "NCCL_P2P_DIRECT_DISABLE" => self.p2p_direct_disable = flag(name, v)?,
            "NCCL_CUMEM_ENABLE" => self.cumem_enable = Some(int(name, v)? != 0),
            "NCCL_NVB_DISABLE" => self.nvb_disable = flag(name, v)?,
            n if n.starts_with("NCCL_") => {
                self.unreplicated.retain(|(k, _)| k != n);
                self.unreplicated.push((n.to_string(), v.to_string()));
            }
            n => {
                return Err(EnvError::new(n, v, EnvProblem::NotNccl));
            }
        }
        Ok(())
    }

    /// The variables set, as `NAME=value` for people (host facts excluded).
    pub fn assignments(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(l) = &self.p2p_level {
            v.push(format!("NCCL_P2P_LEVEL={}", l.level));
        }
        if self.p2p_disable {
            v.push("NCCL_P2P_DISABLE=1".into());
        }
        if self.shm_disable {
            v.push("NCCL_SHM_DISABLE=1".into());
        }
        for (n, x) in [
            ("NCCL_MIN_NCHANNELS", self.min_nchannels),
            ("NCCL_MAX_NCHANNELS", self.max_nchannels),
            ("NCCL_MIN_CTAS", self.min_ctas),
            ("NCCL_MAX_CTAS", self.max_ctas),
            ("NCCL_NTHREADS", self.nthreads),
            ("NCCL_LL128_NTHREADS", self.ll128_nthreads),
        ] {
            if let Some(x) = x {
                v.push(format!("{n}={x}"));
            }
        }
        if let Some(a) = &self.algo {
            v.push(format!("NCCL_ALGO={}", a.text));
        }
        if let Some(p) = &self.proto {
            v.push(format!("NCCL_PROTO={}", p.text));
        }
        for (n, b) in [
            ("NCCL_BUFFSIZE", self.buffsize),
            ("NCCL_LL_BUFFSIZE", self.ll_buffsize),
            ("NCCL_LL128_BUFFSIZE", self.ll128_buffsize),
        ] {
            if let Some(b) = b {
                v.push(format!("{n}={}", b.0));
            }
        }
        if let Some(g) = &self.graph_file {
            v.push(format!("NCCL_GRAPH_FILE={g}"));
        }
        if let Some(r) = self.p2p_read_enable {
            v.push(format!("NCCL_P2P_READ_ENABLE={}", u8::from(r)));
        }
        if self.p2p_direct_disable {
            v.push("NCCL_P2P_DIRECT_DISABLE=1".into());
        }
        if let Some(c) = self.cumem_enable {
            v.push(format!("NCCL_CUMEM_ENABLE={}", u8::from(c)));
        }
        if self.nvb_disable {
            v.push("NCCL_NVB_DISABLE=1".into());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p2p_level_names_integers_and_mistakes() {
        assert_eq!(P2pLevel::parse("SYS").unwrap().level, PathType::Sys);
        assert_eq!(P2pLevel::parse("PHB").unwrap().level, PathType::Phb);
        assert_eq!(P2pLevel::parse("2").unwrap().level, PathType::Pxb);
        assert_eq!(P2pLevel::parse("9").unwrap().level, PathType::Sys);
        assert!(
            P2pLevel::parse("NET").is_err(),
            "NCCL accepts LOC..SYS only"
        );
        assert!(
            P2pLevel::parse("NODE")
                .unwrap_err()
                .to_string()
                .contains("PHB")
        );
        assert_eq!(
            P2pLevel::parse("sys"),
            Err(P2pLevelError::Unknown {
                value: "sys".into(),
                hint: P2pLevelHint::Case("SYS".into())
            })
        );
        assert!(
            P2pLevel::parse("sys")
                .unwrap_err()
                .to_string()
                .contains("`SYS`")
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        let e = NcclEnv::from_pairs([("NCCL_MAX_NCHANNELS", "lots")]).unwrap_err();
        assert!(e.to_string().contains("NCCL_MAX_NCHANNELS"), "{e}");
        let e = NcclEnv::from_pairs([("NCCL_PROTO", "LL,Fast")]).unwrap_err();
        assert!(
            e.to_string().contains("NCCL_PROTO") && e.to_string().contains("Fast"),
            "{e}"
        );
        let e = NcclEnv::from_assignments(["P2P_LEVEL=SYS"]).unwrap_err();
        assert!(e.to_string().contains("not an NCCL variable"), "{e}");
        let ok =
            NcclEnv::from_assignments(["NCCL_SOCKET_IFNAME=eth0", "NCCL_P2P_DISABLE=1"]).unwrap();
        assert!(ok.p2p_disable);
        assert_eq!(ok.unreplicated.len(), 1);
    }

    #[test]
    fn every_modelled_name_is_handled_and_others_are_refused() {
        for name in MODELLED.iter().chain(["NCCL_NVB_DISABLE"].iter()) {
            let value = match *name {
                "NCCL_P2P_LEVEL" => "SYS",
                "NCCL_ALGO" => "Ring",
                "NCCL_PROTO" => "Simple",
                "NCCL_GRAPH_FILE" => "graph.xml",
                _ => "1",
            };
            let mut e = NcclEnv::default();
            e.set_modelled(name, value).unwrap();
            assert!(
                e.unreplicated.is_empty(),
                "{name} fell through to unreplicated"
            );
            assert_ne!(e, NcclEnv::default(), "{name}={value} changed nothing");
        }
        let mut e = NcclEnv::default();
        let err = e.set_modelled("NCCL_P2P_LEVLE", "SYS").unwrap_err();
        assert!(err.to_string().contains("does not know"), "{err}");
        let err = e.set_modelled("NCCL_SOCKET_IFNAME", "eth0").unwrap_err();
        assert!(err.to_string().contains("NCCL_P2P_LEVEL"), "{err}");
    }

    #[test]
    fn algo_and_proto_lists_follow_parse_list() {
        let e = NcclEnv::from_pairs([("NCCL_PROTO", "^LL128"), ("NCCL_ALGO", "ring")]).unwrap();
        let p = e.proto.unwrap();
        assert_eq!(p.table[ALLREDUCE], vec![1, 0, 1]);
        let a = e.algo.unwrap();
        assert_eq!(a.table[ALLREDUCE][1], 1);
        assert_eq!(a.table[ALLREDUCE][0], 0);
        let e = NcclEnv::from_pairs([("NCCL_PROTO", "LL,Simple;allreduce:^LL")]).unwrap();
        let p = e.proto.unwrap();
        assert_eq!(p.table[0], vec![1, 0, 1]);
        assert_eq!(p.table[ALLREDUCE], vec![0, 1, 1]);
        assert!(NcclEnv::from_pairs([("NCCL_ALGO", "ring;tree")]).is_err());
    }
}
