//! The NCCL releases whose rules this crate replicates (2.27, 2.28, 2.29;
//! sources read at tags v2.27.7-1, v2.28.9-1 and v2.29.7-1 of NVIDIA/nccl).
//!
//! Where a rule or constant differs between them, the code asks
//! [`NcclVersion`] and cites the file at each tag.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// A replicated NCCL release line. The default is 2.28, the version on the
/// lent machines (2.28.3, `calibration/h200x2/README.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum NcclVersion {
    /// 2.27.x (read at v2.27.7-1).
    V2_27,
    /// 2.28.x (read at v2.28.9-1 and v2.28.3-1).
    #[default]
    V2_28,
    /// 2.29.x (read at v2.29.7-1).
    V2_29,
}

impl NcclVersion {
    pub const ALL: [NcclVersion; 3] = [NcclVersion::V2_27, NcclVersion::V2_28, NcclVersion::V2_29];

    /// The tag whose sources the rules follow.
    pub fn source_tag(self) -> &'static str {
        match self {
            NcclVersion::V2_27 => "v2.27.7-1",
            NcclVersion::V2_28 => "v2.28.9-1",
            NcclVersion::V2_29 => "v2.29.7-1",
        }
    }

    /// The replicated line for a release `major.minor`, and whether it is
    /// that release line exactly (`false`: the nearest replicated one, for
    /// logs of older or newer releases).
    pub fn nearest(major: u32, minor: u32) -> (NcclVersion, bool) {
        match (major, minor) {
            (2, 27) => (NcclVersion::V2_27, true),
            (2, 28) => (NcclVersion::V2_28, true),
            (2, 29) => (NcclVersion::V2_29, true),
            (2, m) if m < 27 => (NcclVersion::V2_27, false),
            (m, _) if m < 2 => (NcclVersion::V2_27, false),
            _ => (NcclVersion::V2_29, false),
        }
    }
}

impl fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NcclVersion::V2_27 => "2.27",
            NcclVersion::V2_28 => "2.28",
            NcclVersion::V2_29 => "2.29",
        })
    }
}

impl FromStr for NcclVersion {
    type Err = String;
    /// `2.28`, `2.28.3`, `v2.28.9-1`, `2.28.3+cuda12.9`.
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim().trim_start_matches('v');
        let t = t.split(['+', '-']).next().unwrap_or("");
        let mut parts = t.split('.');
        let major = parts.next().and_then(|p| p.parse::<u32>().ok());
        let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
        let patch_ok = parts.all(|p| p.parse::<u32>().is_ok());
        match (major, minor, patch_ok) {
            (Some(2), Some(27), true) => Ok(NcclVersion::V2_27),
            (Some(2), Some(28), true) => Ok(NcclVersion::V2_28),
            (Some(2), Some(29), true) => Ok(NcclVersion::V2_29),
            _ => Err(format!(
                "NCCL version `{s}` is not replicated (2.27, 2.28 or 2.29; default 2.28)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_in_every_spelling() {
        assert_eq!("2.28".parse::<NcclVersion>(), Ok(NcclVersion::V2_28));
        assert_eq!("v2.27.7-1".parse::<NcclVersion>(), Ok(NcclVersion::V2_27));
        assert_eq!(
            "2.29.2+cuda13.0".parse::<NcclVersion>(),
            Ok(NcclVersion::V2_29)
        );
        assert!(
            "2.18"
                .parse::<NcclVersion>()
                .unwrap_err()
                .contains("2.27, 2.28 or 2.29")
        );
        assert_eq!(NcclVersion::default(), NcclVersion::V2_28);
        assert_eq!(NcclVersion::nearest(2, 19), (NcclVersion::V2_27, false));
        assert_eq!(NcclVersion::nearest(2, 30), (NcclVersion::V2_29, false));
    }
}
