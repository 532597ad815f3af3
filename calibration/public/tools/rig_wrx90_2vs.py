"""R4: WRX90 + TR PRO 7955WX, 2x c-payne PM50100 each split into 2 virtual
switches, 8x RTX PRO 6000 Server, three wirings V1/V2/V3."""

from common import *
from wrx90 import *

RIG = "wrx90-pm50100-2vs"
TOPO = "topologies/public/wrx90-pm50100-2vs.toml"
T_V2 = "topologies/public/wrx90-pm50100-2vs-v2.toml"
T_V3 = "topologies/public/wrx90-pm50100-2vs-v3.toml"
VT = {"V1": TOPO, "V2": T_V2, "V3": T_V3}
GPUS = [g(i) for i in range(8)]
SWG = {1: [0, 1], 2: [2, 3], 3: [4, 5], 4: [6, 7]}
FULL = "scripts/collapse_2gpu_full.py"
REPL = "scripts/asus_replica.py"
HARN = "run() of § Methodology, 256 MB"


def chip_of(v, sw):
    if v in ("V1", "V2"):
        return "A" if sw in (1, 3) else "B"
    return "A" if sw in (1, 2) else "B"


def rel(v, a, b):
    sa, sb = a // 2 + 1, b // 2 + 1
    if sa == sb:
        return "same VS"
    return "same chip, other VS" if chip_of(v, sa) == chip_of(v, sb) else "across chips"


def figures():
    F = []
    # ---- V1 single pairs
    sec = "Variant 1 — Original 4-quadrant › V1 — single-pair P2P bandwidth (write)"
    for a, b in ((0, 1), (0, 4), (0, 2), (0, 6)):
        ln, cells = table_row(VS2, f"| GPU {a} → GPU {b} |")
        F.append(torch_fig(f"V1-single-{a}-{b}", f"single pair GPU{a}→GPU{b} ({rel('V1', a, b)}), V1",
                           src_at(VS2, ln, sec, "BW column"), [(a, b)], "write", float(cells[2].split()[0]), HARN, 100,
                           metric="per-stream-gbps", topology=TOPO))
    # ---- 2-pair matrices (src VS -> dst VS, pairs (s0,d0),(s1,d1) as collapse_2gpu_full.py)
    for v, after in (("V1", "### V1 — 2-pair concurrent"), ("V2", "### V2 — single-pair, 2-pair matrix"), ("V3", "### V3 — single-pair, 2-pair matrix")):
        for s in (1, 2, 3, 4):
            needle = f"| **SW{s}→** |" if v == "V1" else f"| SW{s}→ |"
            ln, cells = table_row(VS2, needle, after=after)
            for d in (1, 2, 3, 4):
                if d == s:
                    continue
                val = cells[d].replace("*", "").replace("✨", "").strip()
                pairs = [(SWG[s][0], SWG[d][0]), (SWG[s][1], SWG[d][1])]
                F.append(torch_fig(f"{v}-2pair-sw{s}-to-sw{d}", f"2 pairs SW{s}→SW{d} ({'same chip' if chip_of(v, s) == chip_of(v, d) else 'across chips'}), {v}",
                                   src_at(VS2, ln, after.strip('# ') , f"row SW{s}→, column →SW{d}"), pairs, "write", float(val), HARN, 100,
                                   topology=VT[v], assumed_pairs=f"pairs as {FULL} builds them",
                                   note=("printed rounded (56 / 112)" if v == "V2" else "")))
    # ---- 1 src VS -> 2 dst VSs
    sec1 = "Variant 1 › V1 — 1 src VS → 2 different dst VSs"
    sec3 = "Variant 3 › V3 — 1 src VS → 2 different dst VSs (V1, V2, V3 columns)"
    for s in (1, 2, 3, 4):
        others = [x for x in (1, 2, 3, 4) if x != s]
        for i in range(3):
            for j in range(i + 1, 3):
                d1, d2 = others[i], others[j]
                ln1, c1 = table_row(VS2, f"| SW{s} → SW{d1} + SW{d2} |", after="### V1 — 1 src VS → 2 different dst VSs")
                ln3, c3 = table_row(VS2, f"| SW{s} → SW{d1} + SW{d2} |", after="### V3 — 1 src VS → 2 different dst VSs")
                v1_a, v1_b = c1[1].replace("*", ""), c3[1].replace("*", "")
                pairs = [(SWG[s][0], SWG[d1][0]), (SWG[s][1], SWG[d2][0])]
                for v, col in (("V1", 1), ("V2", 2), ("V3", 3)):
                    val = c3[col].replace("*", "")
                    src = src_at(VS2, ln3, sec3, f"row SW{s} → SW{d1} + SW{d2}, column {v}")
                    note = ""
                    if v == "V1":
                        src = src_at(VS2, ln1, sec1, "Aggregate column") + "; also " + src
                        if v1_a != v1_b:
                            note = f"the V1 table says {v1_a}, the V3 table's V1 column {v1_b}"
                    if v == "V2" and s in (3, 4):
                        lnv2 = find_line(VS2, f"| SW{s} → SW{d1}+SW{d2} |", after="### V2 — 1 src VS → 2 different dst VSs") if (s, d1, d2) in ((3, 2, 4), (4, 1, 3)) else None
                        if lnv2:
                            src += "; also " + src_at(VS2, lnv2, "Variant 2 › V2 — 1 src VS → 2 different dst VSs", "V2 column")
                    if v == "V2" and (s, d1, d2) not in ((3, 2, 4), (4, 1, 3)):
                        note = (note + "; " if note else "") + f"the V2 section says the other 10 patterns are 'identical' to V1; the V3 table's V2 column ({val}) is used"
                    F.append(torch_fig(f"{v}-sw{s}-to-sw{d1}+sw{d2}", f"1 source VS → 2 destination VSs: SW{s} → SW{d1} + SW{d2}, {v}",
                                       src, pairs, "write", float(val), HARN, 100, topology=VT[v],
                                       assumed_pairs=f"pairs as {FULL} builds them (first GPU of each destination VS)", note=note))
    # ---- aggregates
    for v, after, col_4, col_a in (("V1", "### V1 — aggregate / stress", None, None), ("V2", "### V2 — aggregate / stress", 2, 2), ("V3", "### V3 — aggregate / stress", 3, 3)):
        if v == "V1":
            ln_b, cb = table_row(VS2, "| Bidirectional intra-VS (GPU 0 ↔ GPU 1) |", after=after)
            F.append(torch_fig("V1-bidir-intra-vs-0-1", "bidirectional inside VS SW1: GPU0→GPU1 + GPU1→GPU0, V1",
                               src_at(VS2, ln_b, "Variant 1 › V1 — aggregate / stress", "V1 column"), [(0, 1), (1, 0)], "write", float(cb[1].split()[0]),
                               HARN, 100, topology=TOPO, extra={"op": "bidirectional"},
                               assumed_pairs="harness for this row not shown; both directions as two concurrent copies assumed"))
            ln4, c4 = table_row(VS2, "| 4 source switches → 1 dst switch |", after=after)
            lna, ca = table_row(VS2, "| **All-to-all 8 GPU (56 pairs)** |", after=after)
            v4, va = c4[1].split()[0], ca[1].replace("*", "").split()[0]
        else:
            ln4, c4 = table_row(VS2, "| 4 src → 1 dst", after=after)
            lna, ca = table_row(VS2, "| **All-to-all 8 GPU** |", after=after)
            v4, va = c4[col_4].replace("*", ""), ca[col_a].replace("*", "")
        F.append(torch_fig(f"{v}-4src-to-sw1", f"4 source GPUs on 3 other VSs → SW1: (2→0), (4→1), (6→0), (3→1), {v}",
                           src_at(VS2, ln4, f"{v} — aggregate / stress", f"{v} column"), [(2, 0), (4, 1), (6, 0), (3, 1)], "write", float(v4),
                           HARN, 100, topology=VT[v], assumed_pairs=f"pairs as {FULL} lists them (2 from SW2, SW3, SW4)"))
        allp = [(s, d) for s in range(8) for d in range(8) if s != d]
        F.append(torch_fig(f"{v}-all-to-all", f"all 56 ordered pairs at once, {v}",
                           src_at(VS2, lna, f"{v} — aggregate / stress", f"{v} column"), allp, "write", float(va), HARN, 100,
                           topology=VT[v], assumed_pairs=f"pairs as {FULL} builds them (s-major)"))
    # side-by-side: bidirectional for V2/V3, ASUS-replica patterns, single pair
    sec = "Side-by-side summary across all three variants"
    ln, c = table_row(VS2, "| Bidirectional intra-VS |", after="## Side-by-side")
    for v, col in (("V2", 2), ("V3", 3)):
        F.append(torch_fig(f"{v}-bidir-intra-vs-0-1", f"bidirectional inside VS SW1: GPU0→GPU1 + GPU1→GPU0, {v}",
                           src_at(VS2, ln, sec, f"{v} column"), [(0, 1), (1, 0)], "write", float(c[col]), HARN, 100, topology=VT[v],
                           extra={"op": "bidirectional"}, assumed_pairs="pair assumed GPU0↔GPU1 as in V1's row"))
    ln, c = table_row(VS2, "| Single-pair P2P |", after="## Side-by-side")
    for v, col in (("V2", 2), ("V3", 3)):
        F.append({
            "id": f"{v}-single-pair", "what": f"single-pair P2P (pair not stated), {v}", "source": src_at(VS2, ln, sec, f"{v} column"),
            "topology": VT[v], "tool": f"torch copy_ ({HARN}, 100 iterations)", "engine": "copy", "op": "write",
            "pattern": {"kind": "unstated", "gpus": []}, "bytes": "256 MiB", "value": float(c[col]), "metric": "per-stream-gbps", "fit": False,
            "note": "pair not stated (V1's four single pairs are all 56.3)",
        })
    lnw, cw = table_row(VS2, "| 1 src → 2 cross-chip dsts (worst case) |", after="## Side-by-side")
    F.append({
        "id": "V1-worst-1src-2cross", "what": "1 src VS → 2 cross-chip destination VSs, range over patterns, V1",
        "source": src_at(VS2, lnw, sec, "V1 column"), "topology": TOPO, "tool": f"torch copy_ ({HARN}, 100 iterations)", "engine": "copy",
        "op": "write", "pattern": {"kind": "unstated", "gpus": []}, "bytes": "256 MiB", "value": 51.0, "metric": "aggregate-gbps", "fit": False,
        "note": "range 51–56 summarising the V1 rows already recorded (51.4, 54.6, 56.0, 56.4); value = lower end",
    })
    for fid, needle, pairs in (("asus-collapse-pattern", "| ASUS COLLAPSE pattern `(0,2)+(1,6)` |", [(0, 2), (1, 6)]),
                               ("asus-4flow-pattern", "| ASUS 4-flow `(0,2)+(0,6)+(1,3)+(1,7)` |", [(0, 2), (0, 6), (1, 3), (1, 7)])):
        ln, c = table_row(VS2, needle, after="## Side-by-side")
        for v, col in (("V1", 1), ("V2", 2), ("V3", 3)):
            src = src_at(VS2, ln, sec, f"{v} column")
            if v == "V1":
                cn = {"asus-collapse-pattern": "| **2 flows ASUS-equivalent: (0,2)+(1,6)", "asus-4flow-pattern": "| 4 flows: (0,2)+(0,6)+(1,3)+(1,7)"}[fid]
                src += "; also " + cite(CR, cn, "Per-platform trigger thresholds › Microchip PM50100 + TR Pro 7955WX, 8 GPU, 2 VS/chip", "Aggregate WRITE",
                                        c[1], after="### Microchip PM50100 + TR Pro 7955WX, 8 GPU, 2 VS/chip")
            F.append(torch_fig(f"{v}-{fid}", f"the ASUS collapse-trigger pattern {needle.split('`')[1]} on {v}",
                               src, pairs, "write", float(c[col]), f"{REPL} concurrent_write, 256 MB", 100, topology=VT[v],
                               note="control: Broadcom collapses on this pattern; no collapse here"))
    # collapse-report: 1 flow and the 'OK' 2-flow pattern (V1 wiring: chip A = SW1+SW3, values equal V1's)
    secC = "Per-platform trigger thresholds › Microchip PM50100 + TR Pro 7955WX, 8 GPU, 2 VS/chip layout"
    F.append(torch_fig("V1-cr-1flow-sw1-to-sw2", "1 flow SW1→SW2 (GPU0→GPU2 assumed), V1",
                       cite(CR, "| 1 flow SW1→SW2 | 56.3 GB/s |", secC, "Aggregate WRITE", "56.3"), [(0, 2)], "write", 56.3,
                       f"{REPL} concurrent_write, 256 MB", 100, metric="per-stream-gbps", topology=TOPO,
                       assumed_pairs="pair assumed GPU0→GPU2; wiring assumed V1 (chip A = SW1+SW3, and its 2-flow numbers equal V1's)"))
    F.append(torch_fig("V1-cr-2flow-diff-vs", "2 flows from the two VSs of chip A to chip B: (0,2)+(4,6), V1",
                       cite(CR, "| 2 flows OK: (0,2)+(4,6)", secC, "Aggregate WRITE", "95.2"), [(0, 2), (4, 6)], "write", 95.2,
                       f"{REPL} concurrent_write, 256 MB", 100, topology=TOPO,
                       assumed_pairs="wiring assumed V1 (chip A = SW1+SW3, and its 2-flow numbers equal V1's)"))
    F.append({
        "id": "V1-cr-reads-approx", "what": "reads (as labelled) on the ASUS-replica patterns, V1",
        "source": cite(CR, "Reads on these patterns also run at ~56 GB/s", secC, "", "~56"), "topology": TOPO,
        "tool": f"torch copy_ ({REPL} concurrent_read)", "engine": "copy", "op": "write", "source_op": "read",
        "pattern": {"kind": "unstated", "gpus": []}, "value": 56.0, "metric": "aggregate-gbps", "fit": False,
        "note": "approximate, no per-pattern numbers; executed as reverse-direction writes (torch harness)",
    })
    return F


def judgement():
    return []


def topo(v):
    if v == "V1":
        cab = {1: ("rc00", "00:01.1 (bus 01:00.0 upstream)"), 2: ("rc20", "root bus 20 (upstream 21:00.0)"),
               3: ("rc40", "root bus 40 (upstream 41:00.0)"), 4: ("rce0", "root bus e0 (upstream e1:00.0)")}
    elif v == "V2":
        cab = {1: ("rc00", "a root port of root bus 00 (assumed)"), 2: ("rc00", "another root port of root bus 00 (assumed)"),
               3: ("rce0", "a root port of root bus e0 (assumed)"), 4: ("rce0", "another root port of root bus e0 (assumed)")}
    else:
        cab = {1: ("rc00", "00:01.1"), 2: ("rc00", "00:03.1"), 3: ("rce0", "e0:01.1"), 4: ("rce0", "e0:03.1")}
    chips = {"V1": {"A": (1, 3), "B": (2, 4)}, "V2": {"A": (1, 3), "B": (2, 4)}, "V3": {"A": (1, 2), "B": (3, 4)}}[v]
    desc = {"V1": "V1, original 4-quadrant: chip A (SW1, SW3) on Q0 + Q2, chip B (SW2, SW4) on Q1 + Q3",
            "V2": "V2, split 2-quadrant: each chip on Q0 + Q3 (SW1, SW2 on Q0 and SW3, SW4 on Q3 assumed)",
            "V3": "V3, concentrated: chip A (SW1, SW2) both on Q0, chip B (SW3, SW4) both on Q3"}[v]
    t = Topo(f"WRX90 + TR PRO 7955WX, 2x c-payne PM50100 with 2 virtual switches each, 8x RTX PRO 6000 Server: {desc}",
             (f"{RTX6KPRO}@{SHORT} {VS2} (system, wirings, chip mapping from the 112-vs-56 GB/s signature); {CR} § Per-platform trigger "
              f"thresholds; {W16} § MaxReadReq; {MS} § MaxReadReq (MPS on this board); NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet"),
             ("Linux 6.18.24 (Ubuntu 24.04), NVIDIA 595.58.03, CUDA 13.2 driver API, iommu off, ACS Request-Redirect disabled at boot "
              f"({VS2} § System under test); BIOS not stated"),
             (f"{desc}.\nTwo physical PM50100 chips, each partitioned into two virtual switches (VS) with their own Gen5 x16 uplink;\n"
              "two GPUs per VS. Traffic between the two VSs of one chip stays in the chip. No collapse on any wiring.\n"
              + ("V2's assignment of VSs to Q0/Q3 is not stated; by bus order SW1, SW2 -> Q0 and SW3, SW4 -> Q3 is assumed\n"
                 "(it changes only which cross-chip pairs share a quadrant).\n" if v == "V2" else "")))
    for sw in (1, 2, 3, 4):
        for i in SWG[sw]:
            t.gpu(i, "Server Edition", f"GPU{i} on SW{sw} ({VS2} § Variant tables)")
    for sw in (1, 2, 3, 4):
        ch = chip_of(v, sw)
        t.node(f"sw{sw}", "switch", chip=f"pm50100-{ch}", mrrs=128,
               note=(f"SW{sw} = a VS of physical chip {ch} (chip mapping from the 2-pair 112 GB/s signature, {VS2} § Topology overview); "
                     f"Switchtec downstream-port MaxReadReq 128 B ({W16} § MaxReadReq, same switch model); latency not published (fit)"))
    rcs = sorted({cab[s][0] for s in cab}, key=lambda r: list(QUAD).index(r))
    for rc in rcs:
        qd, dom = QUAD[rc]
        ports = ", ".join(f"SW{s} on {cab[s][1]}" for s in cab if cab[s][0] == rc)
        t.node(rc, "root_complex", socket=0, note=f"TR PRO 7955WX quadrant {qd}, root bus {dom}: {ports}; latency and P2P caps not published (fit)")
    t.node("iod0", "cpu_interconnect", socket=0, note="TR PRO 7955WX single I/O die; crossing cost not published (fit)")
    t.node("mem0", "host_memory", socket=0, note="host DDR5, one NUMA node (size/channels not stated on this page)")
    for sw in (1, 2, 3, 4):
        for i in SWG[sw]:
            t.pcie5(g(i), f"sw{sw}", mps=256, mrrs=512, note=f"GPU{i} Gen5 x16; GPU MaxReadReq 512 B ({W16} § MaxReadReq); {MPS_NOTE}")
    for sw in (1, 2, 3, 4):
        rc, port = cab[sw]
        t.pcie5(f"sw{sw}", rc, mps=256, note=f"SW{sw} Gen5 x16 uplink to {port} ({QUAD[rc][0]}); {MPS_NOTE}")
    for ch, (a, b) in chips.items():
        t.link(f"sw{a}", f"sw{b}", "switch_fabric",
               note=f"chip {ch} internal fabric: 2 pairs SW{a}->SW{b} run 112.5 GB/s, i.e. two full links ({VS2} § {v} 2-pair matrix); capacity not published")
    for rc in rcs:
        t.link(rc, "iod0", "die", note=f"{rc} on the I/O die")
    t.link("mem0", "iod0", "memory", bandwidth_gbps=358.4,
           note=f"assumed the same memory as the 16-GPU build of this board: {MEM_NOTE}; no host-DMA figure on this rig depends on it")
    return t


def topologies():
    return [(TOPO, topo("V1")), (T_V2, topo("V2")), (T_V3, topo("V3"))]
