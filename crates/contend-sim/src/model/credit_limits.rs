//! DESIGN 3 — what each receiver of a link direction advertises in
//! flow-control credits per TLP type (posted, non-posted, completion;
//! header credits and data bytes): a property of the fabric, read by the
//! TLP fidelity's credit accounting (`fidelity/tlp/credits.rs`).

use crate::params::ModelParams;
use contend_topo::{LinkKind, NodeKind};

/// Credits a receiver advertises for one TLP type; `None` = infinite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CreditLimit {
    pub hdr: Option<u32>,
    pub data: Option<u32>,
}

const INFINITE: CreditLimit = CreditLimit {
    hdr: None,
    data: None,
};

/// Credits at the receiving end of one link direction: endpoints advertise
/// infinite credits (spec: completions always; the model: posted and
/// non-posted too, endpoints drain at memory speed); a PCIe port its
/// buffers; other receivers (a root complex's side of a CPU or memory link)
/// the root complex's internal buffer.
pub(crate) fn receiver_credits(
    recv: &NodeKind,
    link: &LinkKind,
    p: &ModelParams,
) -> [CreditLimit; 3] {
    if recv.is_endpoint() {
        [INFINITE; 3]
    } else if matches!(link, LinkKind::Pcie(_)) {
        [
            CreditLimit {
                hdr: Some(p.pcie.posted_hdr_credits),
                data: Some(p.pcie.posted_data_bytes),
            },
            CreditLimit {
                hdr: Some(p.pcie.nonposted_hdr_credits),
                data: None,
            },
            CreditLimit {
                hdr: Some(p.pcie.completion_hdr_credits),
                data: Some(p.pcie.completion_data_bytes),
            },
        ]
    } else {
        stage_credits(p)
    }
}

/// A root complex's internal buffer (its stages and the links it receives
/// on that are not PCIe).
pub(crate) fn stage_credits(p: &ModelParams) -> [CreditLimit; 3] {
    let buf = CreditLimit {
        hdr: None,
        data: Some(p.root_complex.buffer_bytes),
    };
    let np = CreditLimit {
        hdr: Some(p.pcie.nonposted_hdr_credits * p.root_complex.nonposted_credit_factor),
        data: None,
    };
    [buf, np, buf]
}
