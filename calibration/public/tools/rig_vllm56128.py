"""R5: 4x RTX PRO 6000 Blackwell Server, PCIe P2P, no NVLink (vllm-project/vllm#56128)."""

from external import *

RIG = "vllm-56128-4gpu"
TOPO = None
GPUS = [g(i) for i in range(4)]
URL = "github.com/vllm-project/vllm/issues/56128"
SRC = f"{URL} (RFC description by Zeuss5, 2026-09-09; withdrawn the same day as 'filed in error') § Peer mapping: cudaIpc, cuMem VMM and symmetric memory are equivalent"
LINKS = [[g(i), g(j)] for i in range(4) for j in range(4) if i != j]
ROWS = (("cudaipc", "`cudaIpcOpenMemHandle`", ("44.78", "42.83", "25.40", "20.60")),
        ("cumem-vmm", "`cuMem*` VMM (POSIX fd)", ("44.71", "42.89", "25.38", "20.56")),
        ("torch-symm", "`torch...._symmetric_memory`", ("44.50", "42.86", "25.36", "20.56")))
BOXN = ("4x RTX PRO 6000 Blackwell Server Edition (GB202, sm_120), PCIe peer-to-peer, no NVLink, driver 580.126.09, CUDA 13.0, "
        "vLLM 0.28.1rc1.dev500; CPU, board, root-port layout and switches not stated")


def figures():
    F = []
    for key, name, (ist, ild, cst, cld) in ROWS:
        for kind, v, op, conc in (("isolated-store", ist, "write", False), ("isolated-load", ild, "read", False),
                                  ("concurrent-store", cst, "write", True), ("concurrent-load", cld, "read", True)):
            notes = ["measured on all 12 directed links, 1.3 MB payload, 16 B per lane, p50 of 1000 reps; how the 12 links are summarised is not stated",
                     "kernel launch geometry (blocks × threads) not stated; platform (CPU, root ports, switch) not stated (no topology file)"]
            if key != "cudaipc":
                notes.append("same measurement with another peer mapping; within 1% of the cudaIpc row")
            if not conc:
                notes.append("p50 per link; which summary over the links the row gives is not stated")
            if conc:
                notes.append(("physically suspicious: 3 peers × " + v + " GB/s = " + f"{3 * float(v):.1f}" +
                              " GB/s through one Gen5 x16 link per GPU (~56 usable); the per-link value cannot be a rate held by all links at once"))
            F.append(ext(f"{key}-{kind}", f"IPC {'stores' if op == 'write' else 'loads'} GPU→peer, {'every rank to all 3 peers at once' if conc else 'one link alone'} ({name.strip('`')})",
                         f"{SRC}, row {name}, column {kind.replace('-', ' ')}", "custom IPC kernel (the RFC's probe)", "sm", op, float(v),
                         "mean-per-stream-gbps" if conc else "per-stream-gbps", "; ".join(notes),
                         pattern=({"kind": "all-to-all", "gpus": GPUS} if conc else {"kind": "one-at-a-time", "pairs": LINKS, "summary": "representative"}),
                         nbytes="1.3 MB", box=BOXN))
    return F


def judgement():
    return [("Qwen3.6-27B-FP8 TP=4 decode throughput, NCCL vs pcie_p2p all-reduce, batch 1/8/32 ± MTP (inference, tok/s)", f"{URL} (description)")]
