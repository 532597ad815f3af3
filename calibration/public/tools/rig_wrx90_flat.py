"""WRX90 + TR PRO 7955WX, 2x c-payne PM50100 flat (4 GPUs each, one root port
each), 8x RTX PRO 6000 Server, old stack (wrx90-cpayne-2switch-flat.md)."""

from common import *
from wrx90 import *

RIG = "wrx90-pm50100-2switch-flat"
TOPO = "topologies/public/wrx90-pm50100-2switch-flat.toml"
GPUS = [g(i) for i in range(8)]


def rel(i, j):
    return "same switch" if (i < 4) == (j < 4) else "across switches"


def figures():
    F = []
    F += p2pblt_matrix(FLAT, "### Bidirectional P2P=Enabled Matrix (GB/s)", [str(i) for i in range(8)], "bidi", rel, "bidi",
                       tool="p2pBandwidthLatencyTest (inferred from the matrix format)", section="P2P Bandwidth Results › Bidirectional P2P=Enabled Matrix")
    F += p2pblt_matrix(FLAT, "### P2P=Enabled Write Latency (µs)", ["0", "1", "4"], "lat", rel, "lat",
                       tool="p2pBandwidthLatencyTest (inferred from the matrix format)", section="P2P Latency Results › P2P=Enabled Write Latency",
                       extra_note="the page prints rows 0, 1 and 4 only")
    sec = "P2P Bandwidth Results › Bandwidth by Tier"
    for tier, needle, v in (("pix", "| PIX (same switch, 4 GPUs) |", "53.4"), ("node", "| NODE (cross-switch, through CPU) |", "53.1")):
        F.append({"id": f"tier-{tier}", "what": f"single-flow {tier.upper()} tier bandwidth (pairs not stated)",
                  "source": cite(FLAT, needle, sec, "Bandwidth column", v), "tool": "not stated", "engine": "copy", "op": "write",
                  "pattern": {"kind": "unstated", "gpus": []}, "value": float(v), "metric": "per-stream-gbps", "fit": False,
                  "note": "tier summary, pairs not stated"})
    sec = "P2P Bandwidth Results › Uplink Degradation Proof"
    for fid, needle, pair, v in (("pix-0-1-gen5", "Baseline:           PIX GPU0→1 = 53.9", (0, 1), "53.9"),
                                 ("node-0-4-gen5", "Baseline:           PIX GPU0→1 = 53.9", (0, 4), "53.4"),
                                 ("pix-0-1-gen2-uplink", "Uplink 20:01.1→Gen2: PIX GPU0→1 = 54.2", (0, 1), "54.2"),
                                 ("node-0-4-gen2-uplink", "Uplink 20:01.1→Gen2: PIX GPU0→1 = 54.2", (0, 4), "7.0")):
        gen2 = "gen2" in fid
        F.append({"id": f"uplink-{fid}", "what": f"single flow GPU{pair[0]}→GPU{pair[1]}, SW1 uplink (20:01.1) at {'Gen2' if gen2 else 'Gen5'}",
                  "source": cite(FLAT, needle, sec, "GPU0→1" if pair == (0, 1) else "GPU0→4", v), "topology": TOPO if not gen2 else TOPO,
                  "tool": "not stated", "engine": "copy", "op": "write", "streams": [[g(pair[0]), g(pair[1])]], "value": float(v),
                  "metric": "per-stream-gbps", "fit": not gen2,
                  "note": "needs a topology with SW1's uplink at Gen2" if gen2 else "single flow, tool not stated"})
    sec = "P2P Latency Results › p2pmark Latency (128-byte remote reads)"
    same = [(a, b) for s in (range(4), range(4, 8)) for a in s for b in s if a != b]
    cross = [(a, b) for a in range(4) for b in range(4, 8)] + [(b, a) for a in range(4) for b in range(4, 8)]
    F.append({"id": "p2pmark-lat-pix", "what": "p2pmark latency, same switch (pairs not stated)",
              "source": cite(FLAT, "| PIX (same switch) | 0.72 µs |", sec, "1:1 Latency", "0.72"), "tool": "p2pmark 3c39f36 --latency",
              "engine": "sm", "op": "read", "pattern": one_at_a_time(same, "representative"), "bytes": "128 B", "value": 0.72,
              "metric": "round-trip-latency-us", "fit": False, "note": "one value for the tier, pairs not stated"})
    for stat, v in (("min", "1.40"), ("max", "1.45")):
        F.append({"id": f"p2pmark-lat-node-{stat}", "what": f"p2pmark latency across switches, {stat} over pairs",
                  "source": cite(FLAT, "| NODE (cross-switch) | **1.40–1.45 µs** |", sec, "1:1 Latency", "1.40–1.45"), "tool": "p2pmark 3c39f36 --latency",
                  "engine": "sm", "op": "read", "pattern": one_at_a_time(cross, stat), "bytes": "128 B", "value": float(v),
                  "metric": "round-trip-latency-us", "fit": False, "note": "range over unnamed pairs"})
    F.append({"id": "p2pmark-8gpu-effective-latency", "what": "p2pmark effective latency, all 8 GPUs read all peers at once",
              "source": cite(FLAT, "Under concurrent load (all 8 GPUs × 7 peers): **7.48 µs effective latency**", sec, "", "7.48"),
              "tool": "p2pmark 3c39f36 --latency", "engine": "sm", "op": "read", "pattern": {"kind": "all-to-all", "gpus": GPUS},
              "bytes": "128 B", "value": 7.48, "metric": "round-trip-latency-us", "fit": True,
              "note": "max over GPUs of per-load time, one single-thread reader kernel per peer"})
    F.append({"id": "p2pmark-4gpu-effective-latency", "what": "p2pmark latency, 4 GPUs of one switch",
              "source": cite(FLAT, "| **4-GPU p2pmark latency** | 2.11 µs |", "Comparison: 2-Switch vs 3-Switch vs Others", "2-Switch Flat column", "2.11"),
              "tool": "p2pmark 3c39f36 --latency", "engine": "sm", "op": "read", "pattern": {"kind": "all-to-all", "gpus": GPUS[:4]},
              "bytes": "128 B", "value": 2.11, "metric": "round-trip-latency-us", "fit": False,
              "note": "which p2pmark latency figure (effective?) and which 4 GPUs (0-3 presumed) not stated"})
    sec = "p2pmark Benchmark Results › Scores"
    for n, needle, link, avg, dense, meas, ideal in ((4, "| 4 GPU | 0.86 (54.4 GB/s) |", "0.86", "54.4", "0.56", "121", "217"),
                                                     (8, "| 8 GPU | 0.85 (53.8 GB/s) |", "0.85", "53.8", "0.38", "162", "431")):
        gl = GPUS[:n]
        src = cite(FLAT, needle, sec, f"{n} GPU row", link)
        base = {"tool": "p2pmark 3c39f36", "engine": "copy", "op": "read"}
        sub = "; 4 GPUs presumed to be GPU0-3 (one switch)" if n == 4 else ""
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
    F += p2pmark_stagger(FLAT, "+{k}: {v} GB/s avg", {1: "50.59", 2: "37.89", 3: "25.64", 4: "12.62", 5: "25.70", 6: "37.96", 7: "50.35"},
                         "p2pmark Benchmark Results › 8 GPU Topology Probe (staggered distance)", None)
    sec = "Multi-Flow Scaling Analysis"
    for fid, needle, v in (("1-pix", "| 1 | PIX (same switch) | 53.4 GB/s |", "53.4"), ("2-pix", "| 2 | PIX (same switch) | 107.5 GB/s |", "107.5"),
                           ("1-node", "| 1 | NODE (cross-switch) | 53.8 GB/s |", "53.8"), ("2-node-same-src", "| 2 | NODE (same src switch) |", "53.8"),
                           ("4-node-1to1", "| 4 | NODE 1:1 |", "53.3"), ("12-same-switch-all", "| 12 | Same-switch all-to-all |", "148.9"),
                           ("16-cross", "| 16 | Cross-switch |", "51.6"), ("56-all", "| 56 | All-to-all |", "168.4")):
        F.append({"id": f"multiflow-{fid}", "what": f"multi-flow scaling: {needle.strip('| ')}",
                  "source": cite(FLAT, needle, sec, "Total BW", v), "tool": "not stated", "engine": "copy", "op": "write",
                  "pattern": {"kind": "unstated", "gpus": []}, "value": float(v), "metric": "aggregate-gbps", "fit": False,
                  "note": "pairs and tool not stated (the mermaid chart above the table repeats these, rounded)"})
    sec = "No Posted-Write Collapse"
    for fid, needle, pairs, w, r in (("0-4+1-6", "| GPU0→GPU4 + GPU1→GPU6 (same src switch) |", [(0, 4), (1, 6)], "53.1", "53.1"),
                                     ("0-4+1-5", "| GPU0→GPU4 + GPU1→GPU5 |", [(0, 4), (1, 5)], "55.1", "54.0")):
        for mode, v in (("write", w), ("read", r)):
            F.append(torch_fig(f"no-collapse-{fid}-{mode}", f"ASUS trigger pattern {needle.split('|')[1].strip()}, {mode.upper()} as labelled",
                               cite(FLAT, needle, sec, "Write BW" if mode == "write" else "Read BW", v), pairs, mode, float(v),
                               "tool not stated; the repo's harness assumed", 20, note="control: no collapse (one destination root complex)"))
    return F


def judgement():
    return [
        ("PCIe oneshot allreduce vs NCCL, TP=4 bf16, 1 KB – 128 KB (µs), crossover 120 KB", cite_line(FLAT, "## PCIe Oneshot AllReduce Crossover")),
        ("GLM-5 TP=8 prefill and decode throughput (inference, tok/s)", cite_line(FLAT, "## GLM-5 Inference Benchmark")),
    ]


def topology():
    t = Topo("WRX90 + TR PRO 7955WX, 2x c-payne PM50100 flat (4 GPUs each, one root port each), 8x RTX PRO 6000 Server",
             (f"{RTX6KPRO}@{SHORT} {FLAT} (system, topology, hardware notes); {MS} § MaxReadReq (MPS on this board); "
              "NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet"),
             (f"Linux 6.17.0-19-generic, NVIDIA 595.45.04 (open), CUDA 13.2 (V13.2.51) ({FLAT} § System Overview); kernel parameters and "
              "BIOS not stated on this page (the 3-switch page of the same box lists mitigations=off amd_iommu=off iommu=off); all 24 ACS-capable "
              "devices ReqRedir- CmpltRedir- without a manual disable"),
             ("Two independent c-payne PM50100 switches, 4 GPUs each; SW1's Gen5 x16 uplink on root port 20:01.1 (quadrant Q1),\n"
              "SW2's on 40:01.1 (Q2). Cross-switch P2P goes through the CPU (Gen2-uplink test: 53.4 -> 7.0 GB/s).\n"))
    for i in range(8):
        t.gpu(i, "Server Edition", f"GPU{i} at bus {['23', '24', '25', '26', '43', '44', '45', '46'][i]}:00.0 on SW{1 if i < 4 else 2} ({FLAT} § Physical PCIe Topology)")
    for s, rc, port in ((1, "rc20", "20:01.1"), (2, "rc40", "40:01.1")):
        t.node(f"sw{s}", "switch", chip=f"pm50100-sw{s}", mrrs=128,
               note=f"c-payne PM50100 SW{s} (upstream {'21' if s == 1 else '41'}:00.0); switch-port MaxReadReq 128 B read-only ({FLAT} § MaxReadReq); latency not published (fit)")
    for rc, port, s in (("rc20", "20:01.1", 1), ("rc40", "40:01.1", 2)):
        qd, dom = QUAD[rc]
        t.node(rc, "root_complex", socket=0, note=f"TR PRO 7955WX quadrant {qd}, root bus {dom}, root port {port} (SW{s}); latency and caps not published (fit)")
    t.node("iod0", "cpu_interconnect", socket=0, note="TR PRO 7955WX single I/O die; crossing cost not published (fit)")
    t.node("mem0", "host_memory", socket=0, note="256 GB DDR5-5600, one NUMA node")
    for i in range(8):
        t.pcie5(g(i), f"sw{1 if i < 4 else 2}", mps=256, mrrs=512, note=f"GPU{i} Gen5 x16 (under load); GPU MaxReadReq 512 B ({FLAT} § MaxReadReq); {MPS_NOTE}")
    for s, rc, port in ((1, "rc20", "20:01.1"), (2, "rc40", "40:01.1")):
        t.pcie5(f"sw{s}", rc, mps=256, note=f"SW{s} Gen5 x16 uplink to {port}; {MPS_NOTE}")
    for rc in ("rc20", "rc40"):
        t.link(rc, "iod0", "die", note=f"{rc} on the I/O die")
    t.link("mem0", "iod0", "memory", bandwidth_gbps=358.4, note=MEM_NOTE)
    return t
