"""R3: ASRockRack GENOAD24QM32 + 1x EPYC 9575F, 4x c-payne PM50100, 16x RTX
PRO 6000, each switch on its own root complex."""

from common import *

RIG = "genoad24qm32-pm50100-16gpu"
TOPO = "topologies/public/genoad24qm32-pm50100-16gpu.toml"
G = "hardware/asrockrack-turin-cpayne-16gpu.md"
W16 = "hardware/wrx90-cpayne-16gpu-4switch.md"
GPUS = [g(i) for i in range(16)]
SW = {1: [0, 1, 2, 3], 2: [4, 5, 6, 7], 3: [8, 9, 10, 11], 4: [12, 13, 14, 15]}
HARN = "256 MB"
ISO = "scripts/collapse_isolation.py (the WRX90 script the page says it re-ran)"
IMP = ("physically impossible as an aggregate: every stream crosses SW{s}'s one Gen5 x16 uplink (63 GB/s raw, ~56.4 measured "
       "saturated); only the harness's early stop (timed_by) explains it")


def figures():
    F = []
    sec = "Single-Pair P2P Bandwidth"
    for fid, needle, pairs, v, what, assumed in (
        ("pix-0-1", "| 1 pair, intra-switch (PIX) |", [(0, 1)], "56.3", "single pair inside one switch", "pair not stated; GPU0→GPU1 assumed (all same-switch pairs are alike in the topology)"),
        ("node-0-4", "| 1 pair, cross-switch (NODE) |", [(0, 4)], "56.3", "single pair across switches", "pair not stated; GPU0→GPU4 assumed"),
        ("2pair-sw1-to-sw2", "| 2 pairs, src→same dst switch (uplink saturation) |", [(0, 4), (1, 5)], "56.4", "2 pairs SW1→SW2", "pairs assumed (0,4)+(1,5)"),
    ):
        F.append(torch_fig(fid, what, cite(G, needle, sec, "Bandwidth column", v), pairs, "write", float(v), HARN, 50,
                           metric="per-stream-gbps" if len(pairs) == 1 else "aggregate-gbps", assumed_pairs=assumed))
    sec = "Single-Pair P2P Bandwidth › 4-pair within ONE switch (12 directional pairs)"
    for s in (1, 2, 3, 4):
        ln, c = table_row(G, f"| SW{s} (intra) |")
        pairs = [(a, b) for a in SW[s] for b in SW[s] if a != b]
        for mode, v in (("write", c[1].replace("*", "").split()[0]), ("read", c[2])):
            F.append(torch_fig(f"intra-sw{s}-all-to-all-{mode}", f"all 12 ordered pairs inside SW{s} at once, {mode.upper()} as labelled",
                               src_at(G, ln, sec, f"row SW{s}, {mode.upper()}"), pairs, mode, float(v), HARN, 50,
                               assumed_pairs="pair order assumed s-major",
                               note=("the page reads the 2.43× W/R gap as a Switchtec property; with this harness the 'READ' run "
                                     "pushes from each GPU's default stream one copy at a time, which alone limits it" if mode == "read" else "")))
    sec = "Multi-Pair Concurrency › 12 patterns: 1 src switch → 2 dst switches"
    for s in (1, 2, 3, 4):
        others = [x for x in (1, 2, 3, 4) if x != s]
        for i in range(3):
            for j in range(i + 1, 3):
                d1, d2 = others[i], others[j]
                ln, c = table_row(G, f"| SW{s} → SW{d1} + SW{d2} |")
                pairs = [(SW[s][0], SW[d1][0]), (SW[s][1], SW[d2][0])]
                for mode, v in (("write", c[1]), ("read", c[2])):
                    F.append(torch_fig(f"sw{s}-to-sw{d1}+sw{d2}-{mode}", f"SW{s} → SW{d1} + SW{d2}, {mode.upper()} as labelled",
                                       src_at(G, ln, sec, f"row SW{s} → SW{d1} + SW{d2}, {mode.upper()}"), pairs, mode, float(v), HARN, 50,
                                       assumed_pairs=f"pairs as {ISO} STEP 2 builds them"))
    sec = "Multi-Pair Concurrency › 1 src → 3 dst switches (full fan-out)"
    for s in (1, 2, 3, 4):
        others = [x for x in (1, 2, 3, 4) if x != s]
        ln, c = table_row(G, f"| SW{s} → SW{others[0]}+SW{others[1]}+SW{others[2]} |")
        pairs = [(SW[s][k], SW[others[k]][0]) for k in range(3)]
        for mode, v in (("write", c[1].replace("*", "")), ("read", c[2].replace("*", ""))):
            F.append(torch_fig(f"sw{s}-to-3-{mode}", f"SW{s} → the other three switches (3 source GPUs), {mode.upper()} as labelled",
                               src_at(G, ln, sec, f"row SW{s}, {mode.upper()}"), pairs, mode, float(v), HARN, 50,
                               impossible=(IMP.format(s=s) if float(v) > 63 else None), assumed_pairs=f"pairs as {ISO} STEP 3 builds them"))
    sec = "Multi-Pair Concurrency › 4-pair fan-out: 4 source GPUs from one switch"
    for fid, needle, pairs, note in (
        ("4x-sw2", "| SW1 → 4×SW2 (1 dst, control) |", [(0, 4), (1, 5), (2, 6), (3, 7)], "control: one destination switch"),
        ("2sw2-sw3-sw4", "| SW1 → 2×SW2 + SW3 + SW4 |", [(0, 4), (1, 5), (2, 8), (3, 12)], ""),
        ("sw2-2sw3-sw4", "| SW1 → SW2 + 2×SW3 + SW4 |", [(0, 4), (1, 8), (2, 9), (3, 12)], ""),
        ("sw2-sw3-2sw4", "| SW1 → SW2 + SW3 + 2×SW4 |", [(0, 4), (1, 8), (2, 12), (3, 13)], ""),
    ):
        ln, c = table_row(G, needle)
        for mode, v in (("write", c[1].replace("*", "")), ("read", c[2].replace("*", ""))):
            F.append(torch_fig(f"4pair-sw1-{fid}-{mode}", f"4 GPUs of SW1 fan out: {needle.strip('| ')}, {mode.upper()} as labelled",
                               src_at(G, ln, sec, f"row {needle.strip('| ')}, {mode.upper()}"), pairs, mode, float(v), HARN, 50,
                               impossible=(IMP.format(s=1) if float(v) > 63 else None), assumed_pairs=f"pairs as {ISO} STEP 4 lists them", note=note))
    ln, c = table_row(G, "| 4-pair SW1→SW3 + 4-pair SW2→SW4 (2 src sw) |")
    pairs = [(k, 8 + k) for k in range(4)] + [(4 + k, 12 + k) for k in range(4)]
    for mode, v in (("write", c[1].replace("*", "")), ("read", c[2].replace("*", ""))):
        F.append(torch_fig(f"8pair-sw1-sw3-and-sw2-sw4-{mode}", f"two source switches: SW1→SW3 and SW2→SW4, 4 pairs each, {mode.upper()} as labelled",
                           src_at(G, ln, sec, f"row 4-pair SW1→SW3 + 4-pair SW2→SW4, {mode.upper()}"), pairs, mode, float(v), HARN, 50,
                           assumed_pairs="pairs assumed GPU i → i+8 (i = 0..7)", note="control: independent source switches"))
    sec = "8-GPU Subset Benchmarks"
    for a, b, needle in ((1, 2, "| SW1 + SW2 (Q0+Q1) |"), (3, 4, "| SW3 + SW4 (Q2+Q3) |"), (1, 3, "| SW1 + SW3 (opposite corners) |"),
                         (1, 4, "| SW1 + SW4 |"), (2, 3, "| SW2 + SW3 |"), (2, 4, "| SW2 + SW4 |")):
        ln, c = table_row(G, needle)
        gl = SW[a] + SW[b]
        pairs = [(s, d) for s in gl for d in gl if s != d]
        for mode, v in (("write", c[1].replace("*", "").split()[0]), ("read", c[2])):
            F.append(torch_fig(f"8gpu-sw{a}+sw{b}-all-to-all-{mode}", f"all 56 ordered pairs of SW{a}+SW{b}, {mode.upper()} as labelled",
                               src_at(G, ln, sec, f"row SW{a} + SW{b}, {mode.upper()}"), pairs, mode, float(v), HARN, 50,
                               assumed_pairs="harness and pair order not shown; the repo's s-major all-pairs list assumed"))
    sec = "16-GPU All-to-All"
    for fid, needle, v, metric in (("write", "| Aggregate WRITE |", "204.4", "aggregate-gbps"), ("read", "| Aggregate READ |", "64.5", "aggregate-gbps"),
                                   ("write-per-pair", "| Per-pair WRITE |", "0.85", "mean-per-stream-gbps"), ("read-per-pair", "| Per-pair READ |", "0.27", "mean-per-stream-gbps")):
        F.append({
            "id": f"16gpu-all-to-all-{fid}", "what": f"16-GPU all-to-all (240 ordered pairs), {fid.replace('-', ' ')} as labelled",
            "source": cite(G, needle, sec, "Value", v, after="## 16-GPU All-to-All"), "tool": "not shown (torch harness presumed)", "engine": "copy", "op": "write",
            **({"source_op": "read"} if fid.startswith("read") else {}),
            "pattern": {"kind": "all-to-all", "gpus": GPUS}, "bytes": "256 MiB", "value": float(v), "metric": metric, "fit": False,
            "note": ("CUDA allows 8 peers per GPU per process (page § Peer mapping limit), so 240 pairs cannot all be peer-mapped in one process; "
                     "how the run was done is not stated" + ("; per-pair = aggregate / 240 (derived)" if "per-pair" in fid else "")),
        })
    sec = "Sustained Behaviour"
    for fid, needle, pairs, w, r in (("3pair-sw1-to-3", "| 3-pair `SW1 → SW2+SW3+SW4` |", [(0, 4), (1, 8), (2, 12)], "55.5", "80.7"),
                                     ("4pair-sw1-2sw2-sw3-sw4", "| 4-pair `SW1 → 2×SW2+SW3+SW4` |", [(0, 4), (1, 5), (2, 8), (3, 12)], "67.0", "110.0")):
        ln = find_line(G, needle)
        for mode, v in (("write", w), ("read", r)):
            F.append(torch_fig(f"sustained-{fid}-200iter-{mode}", f"{needle.strip('| ').replace('`', '')}, 200 iterations, {mode.upper()} as labelled",
                               cite(G, needle, sec, "iter 200 W/R", v), pairs, mode, float(v), HARN, 200,
                               impossible=(IMP.format(s=1) if float(v) > 63 else None), assumed_pairs=f"pairs as {ISO} STEP 5 lists them"))
    return F


def judgement():
    return [
        ("Kimi-K2.6 vLLM decode throughput and speculative accept rate, 8 GPUs (GPU 0-7) and 16 GPUs (inference, tok/s)", cite_line(G, "## Kimi-K2.6 vLLM Sanity Check")),
    ]


def topology():
    t = Topo("ASRockRack GENOAD24QM32 + EPYC 9575F, 4x c-payne PM50100 (one per root complex), 16x RTX PRO 6000 Blackwell",
             (f"{RTX6KPRO}@{SHORT} {G} (system, topology, hardware notes); {W16} (the same switch arrangement on WRX90); "
              "AMD EPYC 9005 (12 channels DDR5-6400 per socket); NVIDIA RTX PRO 6000 Blackwell datasheet"),
             ("ASRockRack BIOS 10.08 (2026-01-07), Linux 6.18.24-061824-generic, NVIDIA 595.58.03 (open), amd_iommu=off iommu=off, "
              f"ACS Request-Redirect cleared on every bridge ({G} § System Overview). The page's vLLM section (2026-04-30) shows the driver "
              "loaded with ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=2;GrdmaPciTopoCheckOverride=1;EnableResizableBar=1; whether the "
              "microbenchmarks ran with it is not stated"),
             ("Single EPYC 9575F (Turin); its 8 visible root complexes are PCI domains 00..e0. Four c-payne PM50100\n"
              "switches, 4 GPUs each, each switch's Gen5 x16 uplink on a distinct root complex: 00:01.1, 40:01.1, 80:01.1,\n"
              "e0:01.1. No collapse on any tested pattern. Latencies and P2P caps are left to be fitted.\n"))
    for s, gl in SW.items():
        for i in gl:
            t.gpu(i, "(edition not stated)", f"CUDA GPU {i} on SW{s} ({G} § Physical PCIe Topology)")
    rc = {1: ("rc00", "00:01.1", "Q0"), 2: ("rc40", "40:01.1", "Q1"), 3: ("rc80", "80:01.1", "Q2"), 4: ("rce0", "e0:01.1", "Q3")}
    for s in SW:
        t.node(f"sw{s}", "switch", chip=f"pm50100-sw{s}", mrrs=128,
               note=(f"c-payne PM50100 SW{s}, its own chip (2 pairs SW1->SW2 saturate at 56.4, {G} § Single-Pair P2P Bandwidth); "
                     f"downstream-port MaxReadReq hardcoded 128 B ({G} § MaxReadReq); latency not published (fit)"))
    for s, (r, port, q_) in rc.items():
        t.node(r, "root_complex", socket=0,
               note=(f"EPYC 9575F root complex, PCI domain {r[2:]}, root port {port} (SW{s}); the page's 8-GPU table labels it {q_}; "
                     "latency and P2P caps not published (fit)"))
    t.node("iod0", "cpu_interconnect", socket=0, note="EPYC 9575F I/O die; crossing cost not published (fit)")
    t.node("mem0", "host_memory", socket=0, note="DDR5, one NUMA node (population not stated)")
    for s, gl in SW.items():
        for i in gl:
            t.pcie5(g(i), f"sw{s}", mrrs=512, note=f"GPU{i} Gen5 x16 (trained under load); GPU MaxReadReq 512 B ({G} § MaxReadReq); MPS not stated")
    for s, (r, port, _) in rc.items():
        t.pcie5(f"sw{s}", r, note=f"SW{s} Gen5 x16 uplink to root port {port}; MPS not stated")
    for s, (r, _, _) in rc.items():
        t.link(r, "iod0", "die", note=f"{r} on the I/O die")
    t.link("mem0", "iod0", "memory", bandwidth_gbps=614.4,
           note="EPYC 9575F maximum (12 channels x DDR5-6400 x 8 B); DIMM population not stated; no host-DMA figure on this rig depends on it")
    return t
