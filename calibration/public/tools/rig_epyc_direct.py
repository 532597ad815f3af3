"""R6: dual EPYC 9575F, 8x RTX PRO 6000 direct-attached (NVIDIA/nccl #2036).
Its only published numbers are NCCL busbw, so the figure file is empty and
the numbers are judgement data."""

from common import *

RIG = "epyc9575f-2socket-direct"
TOPO = "topologies/public/epyc9575f-2socket-direct.toml"
GPUS = [g(i) for i in range(8)]
PR2036 = "github.com/NVIDIA/nccl/pull/2036"
PR2080 = "github.com/NVIDIA/nccl/pull/2080"
PR2113 = "github.com/NVIDIA/nccl/pull/2113"


def figures():
    return []


def judgement():
    return [
        ("NCCL busbw (nccl-tests), dual EPYC 9575F + 8x RTX PRO 6000: 2-GPU cross-socket GPU0↔GPU4 (SYS) avg 32.18 / peak 35.66 GB/s; "
         "2-GPU same-socket GPU0↔GPU1 (NODE) 37.90 / 43.92; 8-GPU ring 21.12 / 23.86",
         f"{PR2036}, comment by voipmonitor 2026-03-31 ('3. AMD CPU Bandwidth' table); the merged commit calls 32.18 'cross-socket GPU P2P "
         "measurements' (NVIDIA/nccl#2441 quotes it), but the table header is 'Avg busBw'"),
        ("all_reduce_perf Ring -g 4 -n 500 busbw, stock (SHM) vs patched (P2P), 4x RTX PRO 6000 on one NUMA node of the same CPU model",
         f"{PR2080}, description by voipmonitor 2026-03-31 § Benchmark results"),
    ]


def topology():
    t = Topo("Dual AMD EPYC 9575F, 8x RTX PRO 6000 Blackwell direct-attached (4 per socket), per NVIDIA/nccl#2036",
             (f"{PR2036} (system: 'dual-socket AMD EPYC 9575F (Turin, Zen 5) with 8× RTX PRO 6000 Blackwell'; GPU0↔GPU4 SYS, GPU0↔GPU1 NODE); "
              f"{PR2080} (same author and CPU); {PR2113} (the 32 GB/s 'assumed 3-link'); AMD EPYC 9005 (xGMI x16 at 32 Gb/s = 64 GB/s per link "
              "per direction; 12 channels DDR5-6400); NVIDIA RTX PRO 6000 Blackwell datasheet"),
             "not stated (no BIOS, kernel, driver, IOMMU or ACS state in the thread); NCCL built from master at the time",
             ("Dual EPYC 9575F, GPUs 0-3 on socket 0 and 4-7 on socket 1, each on its own root port. 'GPU0↔GPU1 NODE' in #2036\n"
              "means different host bridges of one NUMA node, so each GPU gets its own root complex here. The board, the\n"
              "xGMI link count and the memory population are not stated. No microbenchmark was published for this box:\n"
              "its figures.toml is empty and its NCCL numbers are judgement data (README.md).\n"))
    for i in range(8):
        t.gpu(i, "(edition not stated)", f"GPU{i}, socket {0 if i < 4 else 1} ({PR2036}: GPU0↔GPU4 SYS; 4 GPUs per socket assumed)")
    for i in range(8):
        t.node(f"rc{i}", "root_complex", socket=0 if i < 4 else 1,
               note=f"host bridge of GPU{i}'s root port (NODE between GPUs of one socket per {PR2036}); latency and caps not published")
    for s in (0, 1):
        t.node(f"iod{s}", "cpu_interconnect", socket=s, note=f"I/O die of socket {s}; crossing cost not published")
    for s in (0, 1):
        t.node(f"mem{s}", "host_memory", socket=s, note=f"DDR5 of socket {s} (population not stated)")
    for i in range(8):
        t.pcie5(g(i), f"rc{i}", note="Gen5 x16 direct to a CPU root port; MPS/MRRS not stated")
    for i in range(8):
        t.link(f"rc{i}", f"iod{0 if i < 4 else 1}", "die", note=f"rc{i} on the socket {0 if i < 4 else 1} I/O die")
    t.link("iod0", "iod1", "cpu", protocol="xGMI", bandwidth_gbps=192.0,
           note=(f"xGMI: link count not stated; 3 links x 64 GB/s per direction assumed after {PR2113} (marksantesson: the #2036 box is "
                 "'assumed 3-link due to some circumstantial evidence'); GPU P2P limits across it left to fit"))
    for s in (0, 1):
        t.link(f"mem{s}", f"iod{s}", "memory", bandwidth_gbps=614.4,
               note="EPYC 9575F maximum (12 x DDR5-6400 x 8 B); population not stated")
    return t
