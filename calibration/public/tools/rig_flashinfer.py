"""R7: flashinfer-ai/flashinfer#4870 SOL analysis: CX7 (8x L40S Gen4, 4+4 NUMA,
no switch) and CX8 (8x sm_120 Gen5, switch pairs)."""

from external import *

URL = "github.com/flashinfer-ai/flashinfer/pull/4870"
SRC = f"{URL}, comment by qsang-nv 2026-09-08 ('PCIe IPC copy-engine all-reduce — SOL analysis') § What the denominator is, table 'measured rate'"
TOOL = "cudaMemcpyAsync (separate probe driving the schedule's hop pattern at its concurrency)"


def make(box, rows, boxn, n=8):
    F = []
    gl = [g(i) for i in range(n)]
    for fid, what, col_label, v, pattern, extra in rows:
        F.append(ext(fid, what, f"{SRC}, row '{col_label}', column {box}", TOOL, "copy", "write", float(v), "mean-per-stream-gbps",
                     "topology only partly stated (no topology file); per-flow rate as the PR uses it for its floor; " + extra,
                     pattern=pattern, box=boxn))
    return F
