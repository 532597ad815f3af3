"""R7: tinybox, RTX 4090 Gen4 with tinygrad's P2P driver (tinygrad/open-gpu-kernel-modules README)."""

from external import *

RIG = "tinygrad-p2p-6x4090"
TOPO = None
GPUS = [g(i) for i in range(6)]
URL = "github.com/tinygrad/open-gpu-kernel-modules README.md (commit 1f40371)"
BOXN = ("tiny corp 'tinybox green': 6x RTX 4090 (the README's nccl-tests run lists devices 0-5 at buses 01, 42, 81, 82, c1, c2), "
        "Gen4 x16, tinygrad P2P driver; CPU and PCIe tree not stated")
BIDI = """
0 919.39  50.11  50.15  51.22  50.59  51.22
1  50.19 921.29  50.31  51.21  50.62  51.22
2  50.23  50.55 921.83  51.22  50.39  51.22
3  50.33  50.65  51.20 920.20  50.43  51.22
4  50.18  50.68  50.26  51.22 922.30  51.23
5  50.12  50.09  50.44  51.22  51.21 921.29
"""


def figures():
    nt = "box's PCIe tree not published (no topology file)"
    F = [ext("memcpypeer-0-1", "cudaMemcpyPeer / cudaMemcpy GPU0↔GPU1 (simpleP2P)", f"{URL} § Functional ('cudaMemcpyPeer / cudaMemcpy between GPU0 and GPU1: 24.44GB/s')",
             "simpleP2P (cuda-samples)", "copy", "write", 24.44, "per-stream-gbps", nt + "; 64 MB buffers; simpleP2P times copies in both directions alternately",
             streams=[["gpu0", "gpu1"]], nbytes="64 MB", box=BOXN),
         ext("memcpypeer-0-1-broken", "cudaMemcpyPeer GPU0↔GPU1 before the address fix", f"{URL} § How it works ('cudaMemcpyPeer / cudaMemcpy between GPU0 and GPU1: 24.21GB/s')",
             "simpleP2P (cuda-samples)", "copy", "write", 24.21, "per-stream-gbps", nt + "; the README says the copy was not actually landing at this stage (verification errors)",
             streams=[["gpu0", "gpu1"]], nbytes="64 MB", box=BOXN)]
    for i, cells in parse_matrix(BIDI).items():
        for j, v in enumerate(cells):
            if i != j:
                F.append(ext(f"bidi-{i}-{j}", f"bidirectional P2P GPU{i}↔GPU{j}", f"{URL} § Fast, 'Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)', row {i} column {j}",
                             "p2pBandwidthLatencyTest", "copy", "bidirectional", float(v), "aggregate-gbps", nt,
                             streams=[[g(i), g(j)], [g(j), g(i)]], nbytes="160 MB", box=BOXN))
    return F


def judgement():
    return [("nccl-tests all_reduce_perf -g 6, 32 MB: busbw 24.58 (out-of-place) / 24.50 (in-place), avg 24.5413 GB/s", f"{URL} § And NCCL (aka torch) compatible!")]
