"""WRX90 + TR PRO 7955WX, 3x c-payne PM50100 in a root-switch + leaf-switch
hierarchy, 8x RTX PRO 6000 Server, old stack (wrx90-cpayne-microchip-switches.md)."""

from common import *
from wrx90 import *

RIG = "wrx90-pm50100-3switch-hier"
TOPO = "topologies/public/wrx90-pm50100-3switch-hier.toml"
GPUS = [g(i) for i in range(8)]
LEAF = {0: 1, 1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4}


def rel(i, j):
    if LEAF[i] == LEAF[j]:
        return "PIX, same leaf"
    if (i < 4) == (j < 4):
        return "PXB, other leaf under the same root switch"
    return "NODE, across root-switch partitions"


def figures():
    F = []
    F += p2pblt_matrix(MS, "### Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", [str(i) for i in range(8)], "bidi", rel, "bidi",
                       section="P2P Bandwidth Results › Bidirectional P2P=Enabled Bandwidth Matrix")
    F += p2pblt_matrix(MS, "### Unidirectional P2P Write Bandwidth", [str(i) for i in range(8)], "uni", rel, "uni",
                       tool="p2pBandwidthLatencyTest (inferred from the matrix format and 'P2P Write' title)",
                       section="P2P Bandwidth Results › Unidirectional P2P Write Bandwidth")
    F += p2pblt_matrix(MS, "### P2P=Enabled Write Latency (microseconds)", [str(i) for i in range(8)], "lat", rel, "lat",
                       section="P2P Latency Results › P2P=Enabled Write Latency")
    sec = "P2P Latency Results › p2pmark Latency (128-byte remote reads, 10000 iterations)"
    pix = [(a, b) for a in range(8) for b in range(8) if a != b and LEAF[a] == LEAF[b]]
    pxb = [(a, b) for a in range(8) for b in range(8) if LEAF[a] != LEAF[b] and (a < 4) == (b < 4)]
    node = [(a, b) for a in range(8) for b in range(8) if (a < 4) != (b < 4)]
    F.append({"id": "p2pmark-lat-pix", "what": "p2pmark latency, same leaf (pairs not stated)",
              "source": cite(MS, "PIX  (same leaf):         0.71 µs", sec, "", "0.71"), "tool": "p2pmark 3c39f36 --latency", "engine": "sm",
              "op": "read", "pattern": one_at_a_time(pix, "representative"), "bytes": "128 B", "value": 0.71, "metric": "round-trip-latency-us",
              "fit": False, "note": "one value for the tier, pairs not stated"})
    for tier, pairs, needle, lo, hi in (("pxb", pxb, "PXB  (cross-leaf):        0.71–0.73 µs", "0.71", "0.73"),
                                        ("node", node, "NODE (cross root switch): 1.14–1.18 µs", "1.14", "1.18")):
        for stat, v in (("min", lo), ("max", hi)):
            F.append({"id": f"p2pmark-lat-{tier}-{stat}", "what": f"p2pmark latency {tier.upper()}, {stat} over pairs",
                      "source": cite(MS, needle, sec, "", v), "tool": "p2pmark 3c39f36 --latency", "engine": "sm", "op": "read",
                      "pattern": one_at_a_time(pairs, stat), "bytes": "128 B", "value": float(v), "metric": "round-trip-latency-us",
                      "fit": False, "note": "range over unnamed pairs"})
    F.append({"id": "p2pmark-8gpu-effective-latency", "what": "p2pmark effective latency, all 8 GPUs read all 7 peers at once",
              "source": cite(MS, "Under concurrent load (all 8 GPUs reading all 7 peers simultaneously): **6.56 µs effective latency**", sec, "", "6.56")
              + "; also " + cite(MS, "| **8 GPU** | **0.87** (54.8 GB/s) |", "p2pmark Benchmark Results › Scores", "Effective Latency", "6.56"),
              "tool": "p2pmark 3c39f36 --latency", "engine": "sm", "op": "read", "pattern": {"kind": "all-to-all", "gpus": GPUS},
              "bytes": "128 B", "value": 6.56, "metric": "round-trip-latency-us", "fit": True,
              "note": "max over GPUs of per-load time, one single-thread reader kernel per peer"})
    F.append({"id": "p2pmark-4gpu-effective-latency", "what": "p2pmark latency, 4 GPUs",
              "source": cite(FLAT, "| **4-GPU p2pmark latency** | 2.11 µs | 2.11 µs |", "Comparison: 2-Switch vs 3-Switch vs Others", "3-Switch Hierarchy column", "2.11"),
              "tool": "p2pmark 3c39f36 --latency", "engine": "sm", "op": "read", "pattern": {"kind": "all-to-all", "gpus": GPUS[:4]},
              "bytes": "128 B", "value": 2.11, "metric": "round-trip-latency-us", "fit": False,
              "note": "given on the 2-switch page for this topology; which latency figure and which 4 GPUs (0-3 presumed) not stated"})
    sec = "p2pmark Benchmark Results › Scores"
    for n, needle, link, avg, dense, meas, ideal in ((4, "| **4 GPU** | **0.87** (55.0 GB/s) |", "0.87", "55.0", "0.57", "126", "220"),
                                                     (8, "| **8 GPU** | **0.87** (54.8 GB/s) |", "0.87", "54.8", "0.45", "196", "439")):
        gl = GPUS[:n]
        src = cite(MS, needle, sec, f"{n} GPU row", link)
        base = {"tool": "p2pmark 3c39f36", "engine": "copy", "op": "read"}
        sub = "; 4 GPUs presumed to be GPU0-3" if n == 4 else ""
        F.append(dict(base, id=f"p2pmark-{n}gpu-link-score", what=f"p2pmark PCIe link score, {n} GPUs", source=src,
                      pattern={"kind": "many-to-one", "sink": "each", "gpus": gl}, value=float(link), metric="score", fit=False, note="score"))
        F.append(dict(base, id=f"p2pmark-{n}gpu-link-avg", what=f"p2pmark mean single-reader bandwidth, {n} GPUs", source=src,
                      pattern={"kind": "many-to-one", "sink": "each", "gpus": gl}, bytes="64 MiB", value=float(avg), metric="aggregate-gbps",
                      fit=False, note="mean over separate single-reader runs (derived)" + sub))
        F.append(dict(base, id=f"p2pmark-{n}gpu-dense-score", what=f"p2pmark dense interconnect score, {n} GPUs", source=src,
                      pattern={"kind": "all-to-all", "gpus": gl}, value=float(dense), metric="score", fit=False, note="score"))
        F.append(dict(base, id=f"p2pmark-{n}gpu-all-read-all", what=f"p2pmark: all {n} GPUs read all peers at once", source=src,
                      pattern={"kind": "all-to-all", "gpus": gl}, bytes="64 MiB", value=float(meas), metric="aggregate-gbps", fit=True,
                      note="sum of per-GPU rates, each GPU pulling from every peer on its own streams (p2pmark Test 3)" + sub))
        F.append(dict(base, id=f"p2pmark-{n}gpu-ideal", what=f"p2pmark ideal (sum of single-reader runs), {n} GPUs", source=src,
                      pattern={"kind": "many-to-one", "sink": "each", "gpus": gl}, bytes="64 MiB", value=float(ideal), metric="aggregate-gbps",
                      fit=False, note="sum of separate runs (derived)" + sub))
    F += p2pmark_stagger(MS, "+{k}: {v} GB/s avg", {1: "51.55", 2: "39.17", 3: "32.84", 4: "25.63", 5: "32.82", 6: "39.21", 7: "51.53"},
                         "p2pmark Benchmark Results › Topology Probe (8 GPU, staggered distance)", None)
    sec = "Multi-Flow Scaling Analysis › Bandwidth Scaling by Flow Count"
    for fid, needle, v in (("1-pix", "| 1 | PIX (same leaf) |", "53.9"), ("2-pix", "| 2 | PIX (diff leaf switches) |", "108.3"),
                           ("2-pxb", "| 2 | PXB (cross-leaf) |", "108.6"), ("2-node", "| 2 | NODE (cross-root switch) |", "108.7"),
                           ("4-node-1to1", "| 4 | NODE 1:1 |", "108.6"), ("16-cross-root", "| 16 | Cross-root |", "99.6"), ("56-all", "| 56 | All-to-all |", "232.8")):
        F.append({"id": f"multiflow-{fid}", "what": f"multi-flow scaling: {needle.strip('| ')}", "source": cite(MS, needle, sec, "Total BW", v),
                  "tool": "not stated", "engine": "copy", "op": "write", "pattern": {"kind": "unstated", "gpus": []}, "value": float(v),
                  "metric": "aggregate-gbps", "fit": False, "note": "pairs and tool not stated"})
    sec = "Multi-Flow Scaling Analysis › GPU DS Port Isolation"
    F.append(torch_fig("ds-port-same-gpu", "2 flows from GPU0: GPU0→GPU4 + GPU0→GPU2",
                       cite(MS, "| Same GPU: GPU0→GPU4 + GPU0→GPU2 |", sec, "Total BW", "53.9"), [(0, 4), (0, 2)], "write", 53.9,
                       "tool not stated; the repo's harness assumed", 20))
    F.append(torch_fig("ds-port-diff-gpu", "2 flows from different GPUs: GPU0→GPU4 + GPU1→GPU2",
                       cite(MS, "| Diff GPU: GPU0→GPU4 + GPU1→GPU2 |", sec, "Total BW", "107.0"), [(0, 4), (1, 2)], "write", 107.0,
                       "tool not stated; the repo's harness assumed", 20))
    sec = "No Posted-Write Collapse"
    for fid, needle, pairs, w, r in (("0-4+1-6", "| GPU0→GPU4 + GPU1→GPU6 (same leaf → diff dest) |", [(0, 4), (1, 6)], "53.9", "55.0"),
                                     ("0-4+1-5", "| GPU0→GPU4 + GPU1→GPU5 (same leaf → same dest) |", [(0, 4), (1, 5)], "54.5", "56.7"),
                                     ("0-4+2-6", "| GPU0→GPU4 + GPU2→GPU6 (diff leaf → diff dest) |", [(0, 4), (2, 6)], "107.8", "108.0")):
        for mode, v in (("write", w), ("read", r)):
            F.append(torch_fig(f"no-collapse-{fid}-{mode}", f"{needle.split('|')[1].strip()}, {mode.upper()} as labelled",
                               cite(MS, needle, sec, "Write BW" if mode == "write" else "Read BW", v), pairs, mode, float(v),
                               "tool not stated; the repo's harness assumed", 20, note="control: no collapse"))
    sec = "No Posted-Write Collapse › Uplink Degradation Proof"
    for fid, needle, g5, g2 in (("pix", "| PIX (same leaf) |", "54.4", "54.2"), ("pxb", "| PXB (cross-leaf, same root sw) |", "54.2", "54.1"),
                                ("node", "| NODE (cross root switch) |", "54.5", "54.7")):
        for st, v in (("gen5", g5), ("gen2-uplink", g2)):
            F.append({"id": f"uplink-{fid}-{st}", "what": f"single {fid.upper()} flow with the CPU uplinks at {'Gen5' if st == 'gen5' else 'Gen2'}",
                      "source": cite(MS, needle, sec, "Gen5 (normal)" if st == "gen5" else "Gen2 (uplink degraded)", v, after="### Uplink Degradation Proof"),
                      "tool": "not stated", "engine": "copy", "op": "write", "pattern": {"kind": "unstated", "gpus": []}, "value": float(v),
                      "metric": "per-stream-gbps", "fit": False,
                      "note": ("pair not stated (GPU0→GPU4 for NODE per the text); " +
                               ("the Gen2 state needs degraded uplinks in the topology; the unchanged number is what shows cross-partition P2P stays in the root-switch chip"
                                if st != "gen5" else "tier sample"))})
    return F


def judgement():
    return [("PCIe oneshot allreduce vs NCCL, TP=4 bf16, 1 KB – 512 KB (µs), crossover 120 KB", cite_line(MS, "## PCIe Oneshot AllReduce Crossover"))]


def topology():
    t = Topo("WRX90 + TR PRO 7955WX, 3x c-payne PM50100 as root switch + leaf switches (partitioned), 8x RTX PRO 6000 Server",
             (f"{RTX6KPRO}@{SHORT} {MS} (system, topology diagram, nvidia-smi topo, uplink-degradation test, management endpoints, MaxReadReq/MPS); "
              "NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet"),
             (f"Linux 6.17.0-19-generic, NVIDIA 595.45.04 (open), CUDA 13.2 (V13.2.51), mitigations=off amd_iommu=off iommu=off ({MS} § System Overview); "
              "BIOS not stated; ACS ReqRedir off on all 29 devices without a manual disable"),
             ("INTERPRETATION (the page does not draw the chips): the OS sees two trees, root port 20:01.1 -> root switch 1 -> leaves 1, 2\n"
              "and 40:01.1 -> root switch 2 -> leaves 3, 4, built from three PM50100 chips (three management endpoints 21:00.1, 23:00.1,\n"
              "47:00.1). Root switches 1 and 2 are taken as the two partitions of one chip (GPU0->GPU4, 'NODE', is unaffected by Gen2\n"
              "CPU uplinks, so it never reaches the CPU), and leaves 1+2 and 3+4 as the partitions of the two other chips (PXB latency\n"
              "0.71-0.73 us = PIX 0.71, so leaf-to-leaf traffic does not visibly cross the root switch). Check before fitting on it.\n"))
    bus = ["25", "26", "2A", "2B", "45", "46", "49", "4A"]
    for i in range(8):
        t.gpu(i, "Server Edition", f"GPU{i} at {bus[i]}:00.0 on leaf {LEAF[i]} ({MS} § Physical PCIe Topology)")
    for rs, up, port in (("rs1", "21:00.0", "20:01.1"), ("rs2", "41:00.0", "40:01.1")):
        t.node(rs, "switch", chip="pm50100-root", mrrs=128,
               note=(f"root switch {rs[-1]} (upstream {up}, root port {port}); modelled as one partition of the root-switch chip "
                     f"(see the comment at the top); switch ports MPS 256 B, MaxReadReq 128 B ({MS} § MaxReadReq); latency not published (fit)"))
    for leaf, chip in ((1, "pm50100-leafA"), (2, "pm50100-leafA"), (3, "pm50100-leafB"), (4, "pm50100-leafB")):
        t.node(f"leaf{leaf}", "switch", chip=chip, mrrs=128,
               note=f"leaf switch {leaf}, modelled as a partition of chip {chip[-5:]} (inferred); latency not published (fit)")
    for rc, port, rs in (("rc20", "20:01.1", "rs1"), ("rc40", "40:01.1", "rs2")):
        qd, dom = QUAD[rc]
        t.node(rc, "root_complex", socket=0, note=f"TR PRO 7955WX quadrant {qd}, root bus {dom}, root port {port} ({rs}); latency and caps not published (fit)")
    t.node("iod0", "cpu_interconnect", socket=0, note="TR PRO 7955WX single I/O die; crossing cost not published (fit)")
    t.node("mem0", "host_memory", socket=0, note="256 GB DDR5-5600, one NUMA node")
    for i in range(8):
        t.pcie5(g(i), f"leaf{LEAF[i]}", mps=256, mrrs=512, note=f"GPU{i} Gen5 x16; GPU MPS 256 B, MaxReadReq 512 B ({MS} § MaxReadReq)")
    for leaf, rs in ((1, "rs1"), (2, "rs1"), (3, "rs2"), (4, "rs2")):
        t.pcie5(f"leaf{leaf}", rs, mps=256, note=f"leaf {leaf} x16 to a downstream port of {rs} (Gen5 stated for all links); MPS 256 B")
    for rs, rc in (("rs1", "rc20"), ("rs2", "rc40")):
        t.pcie5(rs, rc, mps=256, note=f"{rs} Gen5 x16 to the CPU; MPS 256 B; Gen2 here leaves every GPU-GPU figure unchanged ({MS} § Uplink Degradation Proof)")
    t.link("rs1", "rs2", "switch_fabric", note="inferred: the root-switch chip's internal fabric carries NODE traffic (54.5 GB/s single flow, 108.7 for 2); capacity not published")
    t.link("leaf1", "leaf2", "switch_fabric", note="inferred: leaf chip A internal fabric (PXB single flow 54.2, 2 flows 108.6); capacity not published")
    t.link("leaf3", "leaf4", "switch_fabric", note="inferred: leaf chip B internal fabric; capacity not published")
    for rc in ("rc20", "rc40"):
        t.link(rc, "iod0", "die", note=f"{rc} on the I/O die")
    t.link("mem0", "iod0", "memory", bandwidth_gbps=358.4, note=MEM_NOTE)
    return t
