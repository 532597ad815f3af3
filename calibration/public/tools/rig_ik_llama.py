"""R7: 9 GPUs with patched P2P (ikawrakow/ik_llama.cpp#1022)."""

from external import *

RIG = "ik-llama-1022-9gpu"
TOPO = None
GPUS = [g(i) for i in range(9)]
URL = "github.com/ikawrakow/ik_llama.cpp/pull/1022"
BOXN = ("aikitoria's box per the same PR (comment 2025-12-04): device 0 RTX PRO 6000 Blackwell Workstation Edition (bus c1), devices 1-8 "
        "RTX 5090 (buses 01, 11, 61, 71, 81, 91, e1, f1), patched P2P driver; CPU, board and PCIe tree not stated")
UNI = """
0 1604.16  56.95  56.78  57.30  57.30  56.43  56.55  56.77  56.35
1  56.87 1641.20  57.28  57.00  57.36  57.03  57.04  56.93  56.81
2  56.64  57.83 1642.95  57.18  57.23  56.91  56.79  56.95  56.69
3  56.74  57.45  57.03 1642.95  57.17  56.82  57.06  56.80  56.94
4  56.61  57.55  57.11  57.10 1644.68  56.81  56.87  56.93  56.64
5  56.91  57.30  57.17  57.07  57.11 1644.68  56.45  56.81  56.26
6  56.71  56.85  56.86  57.20  57.29  56.27 1644.66  56.32  56.44
7  56.57  56.96  56.76  56.82  57.60  56.66  56.62 1646.42  56.67
8  56.21  56.81  56.87  57.15  56.43  56.20  56.60  56.84 1639.48
"""
BIDI = """
0 1600.87 111.12 111.09 111.10 111.11 111.38 111.38 111.38 111.38
1 111.09 1637.76 111.34 111.39 111.42 111.17 111.00 111.13 111.10
2 111.09 111.39 1637.79 111.39 111.45 111.16 111.10 111.10 111.10
3 111.08 111.39 111.39 1636.07 111.40 111.15 111.16 111.13 111.12
4 111.21 111.39 111.39 111.40 1636.07 111.19 111.04 111.14 111.13
5 111.38 111.09 111.13 111.14 111.08 1641.20 111.34 111.38 111.39
6 111.40 111.12 111.11 111.09 111.03 111.35 1637.79 111.38 111.38
7 111.34 111.14 111.09 111.11 111.14 111.38 111.39 1639.51 111.38
8 111.40 111.13 111.15 111.16
"""


def figures():
    F = []
    common_note = ("box's PCIe tree not published (no topology file); mixed GPUs (device 0 RTX PRO 6000 WS, 1-8 RTX 5090); "
                   "the matrices are in a later comment by aikitoria (the 'turn 17' chunk of the thread), assumed to be the same box")
    for kind, text in (("uni", UNI), ("bidi", BIDI)):
        rows = parse_matrix(text)
        for i, cells in rows.items():
            for j, v in enumerate(cells):
                if i == j:
                    continue
                if kind == "uni":
                    F.append(ext(f"uni-{i}-{j}", f"unidirectional P2P write GPU{i}→GPU{j} alone",
                                 f"{URL}, comment by aikitoria (p2pBandwidthLatencyTest output; matrix before 'Bidirectional P2P=Enabled'), row {i} column {j}",
                                 "p2pBandwidthLatencyTest", "copy", "write", float(v), "per-stream-gbps",
                                 common_note + ("; the matrix header is not in the stored text: in the sample's print order the matrix just before "
                                                "'Bidirectional P2P=Enabled' is 'Bidirectional P2P=Disabled', but its values (56-58, diagonal ~1600) "
                                                "are those of the unidirectional P2P=Enabled matrix, which is how PUBLIC-DATA reads it"),
                                 streams=[[g(i), g(j)]], nbytes="160 MB", box=BOXN))
                else:
                    F.append(ext(f"bidi-{i}-{j}", f"bidirectional P2P GPU{i}↔GPU{j}",
                                 f"{URL}, comment by aikitoria, 'Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)', row {i} column {j}",
                                 "p2pBandwidthLatencyTest", "copy", "bidirectional", float(v), "aggregate-gbps",
                                 common_note + ("; row 8 is cut after column 3 in the stored text" if i == 8 else ""),
                                 streams=[[g(i), g(j)], [g(j), g(i)]], nbytes="160 MB", box=BOXN))
    return F


def judgement():
    return [("ik_llama.cpp split-mode graph / tensor-parallel token rates in the PR (inference)", URL)]
