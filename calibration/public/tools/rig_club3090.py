"""R7: 3x RTX 3090, Gen4 x8, CPU lanes vs chipset (noonghunna/club-3090 #895, #889)."""

from external import *

RIG = "club3090-895-3x3090"
TOPO = None
GPUS = [g(i) for i in range(3)]
U895 = "github.com/noonghunna/club-3090/pull/895"
U889 = "github.com/noonghunna/club-3090/pull/889"
BOXN = ("community 3x RTX 3090 rig: GPU1 and GPU2 on CPU lanes, GPU0 behind the chipset; all 'PHB' in nvidia-smi topo -m and "
        "'4.0 x8' per #895 (#889 says the chipset card ran at x4); CPU/board not stated")


def figures():
    nt = "box's PCIe tree not published (no topology file; contend has no chipset node)"
    return [
        ext("cpu-lanes-1-2", "P2P GPU1↔GPU2, both on CPU lanes", f"{U895} description § 3a table, row GPU1 ↔ GPU2; also {U889} description ('best pair 6.08 → 13.17 GB/s with P2P')",
            "p2pBandwidthLatencyTest (per #889)", "copy", "write", 13.17, "per-stream-gbps",
            nt + "; unidirectional or bidirectional not stated (13.17 fits one direction of Gen4 x8); direction not stated",
            streams=[["gpu1", "gpu2"]], box=BOXN),
        ext("chipset-0-1-2", "P2P GPU0 ↔ GPU1/GPU2 through the chipset", f"{U895} description § 3a table, row GPU0 ↔ GPU1/2",
            "p2pBandwidthLatencyTest (presumed)", "copy", "write", 6.5, "per-stream-gbps",
            nt + "; approximate (~6.5) over two pairs", pattern={"kind": "one-at-a-time", "pairs": [["gpu0", "gpu1"], ["gpu0", "gpu2"]], "summary": "approximate"}, box=BOXN),
        ext("cpu-lanes-1-2-p2p-off", "GPU1↔GPU2 with P2P off (host-staged)", f"{U889} description table, row p2pBandwidthLatencyTest best pair ('6.08 → 13.17 GB/s with P2P')",
            "p2pBandwidthLatencyTest", "copy", "write", 6.08, "per-stream-gbps", nt + "; P2P disabled (staged through host memory)",
            streams=[["gpu1", "gpu2"]], box=BOXN),
    ]


def judgement():
    return [("llama.cpp --split-mode tensor ~150 TPS with and without GGML_CUDA_P2P; decode PCIe traffic ~7 MB/s (layer) vs ~1400 MB/s (row/tensor)", f"{U889}; github.com/noonghunna/club-3090/pull/887")]
