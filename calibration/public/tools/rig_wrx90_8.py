"""R1: the 8-GPU groups of the WRX90 16-GPU box (3-root cabling, current
stack): Group A = SW1+SW2 on separate root complexes (Q0, Q2), Group B =
SW3+SW4 sharing root complex Q3 (wrx90-cpayne-8gpu-root-topology-comparison.md)."""

from common import *
from wrx90 import *

RIG = "wrx90-pm50100-8gpu"
TOPO = "topologies/public/wrx90-pm50100-8gpu.toml"                 # Group A
T_B = "topologies/public/wrx90-pm50100-8gpu-shared-root.toml"       # Group B
GPUS = [g(i) for i in range(16)]
SCR = "group_compare.py (page § Raw Script)"


def topo_of(i):
    return TOPO if i < 8 else T_B


def figures():
    F = []
    ls = lines_of(RTC)
    # ---- 8x8 write matrices
    for grp, first, marker in (("A", 0, "**Group A (separate roots, GPU 0–7):**"), ("B", 8, "**Group B (shared root, GPU 8–15):**")):
        start = find_line(RTC, marker)
        sec = f"Results › 1. P2P Write Bandwidth Matrix › Group {grp}"
        for r in range(8):
            i = first + r
            lab = f"GPU{i:2d}" if i >= 10 else f"GPU {i}"
            n = next(k for k in range(start, start + 20) if ls[k].startswith(lab + " ") or ls[k].startswith(lab + "\t"))
            cells = ls[n][len(lab):].split()
            assert len(cells) == 8, (i, cells)
            for c in range(8):
                j = first + c
                if i == j:
                    assert cells[c] == "-"
                    continue
                same = (i // 4) == (j // 4)
                F.append(torch_fig(f"write-{i}-{j}", f"single-pair write GPU{i}→GPU{j} ({'same switch' if same else 'across switches'}), Group {grp}",
                                   src_at(RTC, n + 1, sec, f"row GPU {i} column GPU {j}"), [(i, j)], "write", float(cells[c]),
                                   f"{SCR} bw_pair, 256 MB", 15, metric="per-stream-gbps", topology=topo_of(i)))
    for grp, col in (("A", 1), ("B", 2)):
        for kind, needle, n in (("same-switch", "| Same-switch avg WRITE (24 pairs) |", 24), ("cross-switch", "| Cross-switch avg WRITE (32 pairs) |", 32)):
            ln, cells = table_row(RTC, needle)
            first = 0 if grp == "A" else 8
            sws = [list(range(first, first + 4)), list(range(first + 4, first + 8))]
            if kind == "same-switch":
                pairs = [(a, b) for s in sws for a in s for b in s if a != b]
            else:
                pairs = [(a, b) for a in sws[0] for b in sws[1]] + [(b, a) for a in sws[0] for b in sws[1]]
            F.append({
                "id": f"group{grp}-{kind}-avg", "what": f"mean single-pair write over the {n} {kind} pairs, Group {grp}",
                "source": src_at(RTC, ln, "Results › 1. Same-switch and cross-switch averages", f"row {needle.strip('| ')}, column Group {grp}"),
                "topology": TOPO if grp == "A" else T_B, "tool": f"torch copy_ ({SCR} bw_pair, 15 iterations)", "engine": "copy", "op": "write",
                "pattern": one_at_a_time(pairs, "mean"), "bytes": "256 MiB", "value": float(cells[col].split()[0]),
                "metric": "per-stream-gbps", "fit": False, "note": "mean of matrix cells already recorded (derived)",
            })
    for grp, topo, (pc_same, pc_cross, tl) in (("A", TOPO, ("56.29", "56.27", "56.27")), ("B", T_B, ("56.27", "56.28", "56.28"))):
        for kind, needle, v in (("same-switch", "| Single-pair same-switch WRITE |", pc_same), ("cross-switch", "| Single-pair cross-switch WRITE |", pc_cross)):
            ln, cells = table_row(RTC, needle, after="## Summary Table")
            F.append({
                "id": f"group{grp}-summary-{kind}", "what": f"summary: single-pair {kind} write, Group {grp}",
                "source": src_at(RTC, ln, "Summary Table", f"row {needle.strip('| ')}, column Group {grp}"),
                "topology": topo, "tool": f"torch copy_ ({SCR})", "engine": "copy", "op": "write",
                "pattern": {"kind": "unstated", "gpus": []}, "bytes": "256 MiB", "value": float(v), "metric": "per-stream-gbps",
                "fit": False, "note": "summary value, pairs not stated (differs in the second decimal from the matrix means)",
            })
        ln, cells = table_row(RTC, "| Single-pair bandwidth (any pair, GB/s) |")
        F.append({
            "id": f"group{grp}-tldr-single-pair", "what": f"TL;DR single-pair bandwidth, any pair, Group {grp}",
            "source": src_at(RTC, ln, "TL;DR", f"column Group {grp}"), "topology": topo, "tool": f"torch copy_ ({SCR})",
            "engine": "copy", "op": "write", "pattern": {"kind": "unstated", "gpus": []}, "bytes": "256 MiB",
            "value": float(tl), "metric": "per-stream-gbps", "fit": False, "note": "summary value, pairs not stated",
        })
    # ---- stream-launched ping-pong (CPU-bound)
    for kind, needle, pairsA, pairsB in (
        ("same-switch", "| Same-switch avg latency |", [(0, 1), (4, 5)], [(8, 9), (12, 13)]),
        ("cross-switch", "| Cross-switch avg latency |", [(0, 4), (1, 5), (2, 6), (3, 7)], [(8, 12), (9, 13), (10, 14), (11, 15)]),
    ):
        ln, cells = table_row(RTC, needle, after="#### 2a.")
        for grp, col, pairs in (("A", 1, pairsA), ("B", 2, pairsB)):
            F.append({
                "id": f"group{grp}-stream-pingpong-{kind}", "what": f"stream-launched ping-pong (tensor.copy_ of 1 float each way), {kind}, Group {grp}",
                "source": src_at(RTC, ln, "Results › 2a. Stream-launched ping-pong", f"row {needle.strip('| ')}, column Group {grp}"),
                "topology": TOPO if grp == "A" else T_B, "tool": f"torch copy_ ({SCR} latency_pair, 1000 round trips)", "engine": "copy",
                "op": "ping-pong", "pattern": one_at_a_time(pairs, "mean"), "bytes": "4 B", "value": float(cells[col].split()[0]),
                "metric": "copy-latency-us", "fit": False,
                "note": ("time per copy_ of back-to-back 4-byte copies a→b, b→a issued from Python; the page says it is dominated by "
                         "~5 µs of CPU-side launch overhead per copy and not a fabric measurement; pairs assumed to be the four listed in § 2b"),
            })
    # ---- GPU-resident ping-pong
    for (a, b), v in (((0, 1), "633"), ((4, 5), "726"), ((8, 9), "727"), ((12, 13), "636")):
        ln = find_line(RTC, f"| GPU {a} ↔ GPU {b} ")
        F.append({
            "id": f"pingpong-{a}-{b}", "what": f"GPU-resident ping-pong GPU{a}↔GPU{b}, same switch, one way",
            "source": src_at(RTC, ln, "Results › 2b. GPU-resident kernel ping-pong › Same-switch", "One-way latency"),
            "topology": topo_of(a), "tool": "gpu_latency.cu (GPU-resident ping-pong)", "engine": "sm", "op": "ping-pong",
            "streams": [[g(a), g(b)], [g(b), g(a)]], "bytes": "4 B", "value": float(v), "metric": "one-way-latency-ns", "fit": True,
            "note": "one thread per GPU stores the round number into the peer's 4-byte flag and spins on its own; elapsed / (2 × 1,000,000 rounds); 3 runs, ±1 ns",
        })
    for grp, rows, mean_needle, mean in (("A", (((0, 4), "1071"), ((1, 5), "1069"), ((2, 6), "1081"), ((3, 7), "1068")), "| **Group A mean** |", "1072.3"),
                                         ("B", (((8, 12), "1069"), ((9, 13), "1057"), ((10, 14), "1060.7"), ((11, 15), "1062")), "| **Group B mean** |", "1062.2")):
        sec = f"Results › 2b › Cross-switch — Group {grp}"
        for (a, b), v in rows:
            ln = find_line(RTC, f"| GPU {a} ↔ GPU {b} ", after=f"**Cross-switch — Group {grp}")
            F.append({
                "id": f"pingpong-{a}-{b}", "what": f"GPU-resident ping-pong GPU{a}↔GPU{b}, across switches, one way, Group {grp}",
                "source": src_at(RTC, ln, sec, "Mean of 3 runs"), "topology": topo_of(a),
                "tool": "gpu_latency.cu (GPU-resident ping-pong)", "engine": "sm", "op": "ping-pong",
                "streams": [[g(a), g(b)], [g(b), g(a)]], "bytes": "4 B", "value": float(v), "metric": "one-way-latency-ns", "fit": True,
                "note": "as above; " + ("separate root complexes Q0/Q2" if grp == "A" else "both switches on root complex Q3"),
            })
        ln = find_line(RTC, mean_needle)
        ln2, cells = table_row(RTC, "| **HW one-way latency cross-switch (GPU-resident)** |")
        ln3, cells3 = table_row(RTC, "| Cross-switch one-way HW latency (ns) |")
        F.append({
            "id": f"group{grp}-pingpong-cross-mean", "what": f"mean GPU-resident one-way latency across switches, Group {grp}",
            "source": src_at(RTC, ln, sec, "Mean") + "; also " + src_at(RTC, ln2, "Summary Table", f"Group {grp}") + "; also " + src_at(RTC, ln3, "TL;DR", f"Group {grp}"),
            "topology": TOPO if grp == "A" else T_B, "tool": "gpu_latency.cu (GPU-resident ping-pong)", "engine": "sm", "op": "ping-pong",
            "pattern": one_at_a_time([p for p, _ in rows], "mean"), "bytes": "4 B", "value": float(mean), "metric": "one-way-latency-ns",
            "fit": False, "note": ("mean of the four pairs above (derived)" + ("; the TL;DR prints 1062.3, the table 1062.2" if grp == "B" else "")),
        })
    # ---- concurrent cross-switch, bidirectional, all-to-all
    for grp, topo, base in (("A", TOPO, 0), ("B", T_B, 8)):
        for fid, needle_s, needle_t, col, pairs, v_sum in (
            ("2pair", "| 2-pair concurrent cross-switch |", "| 2 pairs SW_a → SW_b |", None, [(base, base + 4), (base + 1, base + 5)], ("56.39", "56.41")),
            ("4pair", "| 4-pair concurrent cross-switch |", "| 4 pairs SW_a → SW_b |", None, [(base + k, base + 4 + k) for k in range(4)], ("56.41", "56.41")),
        ):
            v = v_sum[0] if grp == "A" else v_sum[1]
            ln1 = find_line(RTC, needle_s, after="## Summary Table")
            ln2 = find_line(RTC, needle_t, after="### 3. Concurrent Multi-Pair")
            F.append(torch_fig(f"group{grp}-{fid}-cross", f"{fid[0]} pairs from one switch to the other, Group {grp}",
                               src_at(RTC, ln1, "Summary Table", f"Group {grp}") + "; also " + src_at(RTC, ln2, "Results › 3. Concurrent Multi-Pair Bandwidth", f"Group {grp} (56.4)"),
                               pairs, "write", float(v), f"{SCR} concurrent_pairs, 256 MB", 15, topology=topo,
                               assumed_pairs="pairs not listed; GPU i → GPU i+4 of the other switch assumed"))
        v = "109.26" if grp == "A" else "109.34"
        ln1 = find_line(RTC, "| Bidirectional cross-switch |", after="## Summary Table")
        ln2 = find_line(RTC, "| Bidirectional, 2 pairs |")
        F.append(torch_fig(f"group{grp}-bidir-cross", f"two flows between the switches, one each way, Group {grp}",
                           src_at(RTC, ln1, "Summary Table", f"Group {grp}") + "; also " + src_at(RTC, ln2, "Results › 4. Bidirectional Cross-Switch", f"Group {grp} (109.3)"),
                           [(base, base + 4), (base + 4, base)], "write", float(v), f"{SCR} concurrent_pairs, 256 MB", 15, topology=topo,
                           assumed_pairs="pairs not listed; GPU i → i+4 and GPU i+4 → i assumed", extra={"op": "bidirectional"}))
        v = "179.04" if grp == "A" else "179.10"
        ln1 = find_line(RTC, "| All-to-all aggregate |", after="## Summary Table")
        ln2 = find_line(RTC, "| Aggregate bandwidth |", after="### 5. All-to-All")
        allp = [(s, d) for s in range(base, base + 8) for d in range(base, base + 8) if s != d]
        F.append(torch_fig(f"group{grp}-all-to-all", f"all 56 ordered pairs of Group {grp} at once",
                           src_at(RTC, ln1, "Summary Table", f"Group {grp}") + "; also " + src_at(RTC, ln2, "Results › 5. All-to-All Stress", f"Group {grp} (179.0/179.1)"),
                           allp, "write", float(v), f"{SCR} concurrent_pairs, 256 MB", 5, topology=topo,
                           assumed_pairs="pair order assumed s-major"))
        ln = find_line(RTC, "| All-to-all per-pair |", after="## Summary Table")
        F.append({
            "id": f"group{grp}-all-to-all-per-pair", "what": f"all-to-all per pair, Group {grp}", "source": src_at(RTC, ln, "Summary Table", f"Group {grp}"),
            "topology": topo, "tool": f"torch copy_ ({SCR})", "engine": "copy", "op": "write",
            "pattern": {"kind": "all-to-all", "gpus": [g(i) for i in range(base, base + 8)]}, "bytes": "256 MiB", "value": 3.20,
            "metric": "mean-per-stream-gbps", "fit": False, "note": "aggregate / 56 (derived)",
        })
    # ---- host DMA
    sec = "Results › 8. Host RAM ↔ GPU DMA aggregate bandwidth › Single-GPU baseline"
    for i in (0, 4, 8, 12):
        ln, cells = table_row(RTC, f"| GPU {i} ", after="Single-GPU baseline")
        for op, col in (("h2d", 1), ("d2h", 2)):
            F.append({
                "id": f"host-{op}-gpu{i}", "what": f"{op.upper()} GPU{i} alone, pinned host buffer",
                "source": src_at(RTC, ln, sec, f"row GPU {i}, column {op.upper()}"), "topology": topo_of(i),
                "tool": "cudaMemcpyAsync (1 GB, 5 iterations)", "engine": "copy", "op": op,
                "streams": [[g(i), "mem0"]], "bytes": "1 GB", "value": float(cells[col].split()[0]), "metric": "per-stream-gbps", "fit": True,
                "note": "pinned host buffer; host memory placement not stated (one NUMA node)",
            })
    sec = "Results › 8. Concurrent 8-GPU host DMA"
    for op, needle in (("h2d", "| H2D |"), ("d2h", "| D2H |")):
        ln, cells = table_row(RTC, needle, after="**Concurrent 8-GPU host DMA")
        lnS, cellsS = table_row(RTC, f"| **8-GPU host RAM {op.upper()} aggregate** |")
        for grp, base, col_agg, col_per, topo in (("A", 0, 1, 2, TOPO), ("B", 8, 3, 4, T_B)):
            gg = [g(i) for i in range(base, base + 8)]
            F.append({
                "id": f"host-{op}-group{grp}-8gpu", "what": f"{op.upper()} from all 8 GPUs of Group {grp} at once (aggregate)",
                "source": src_at(RTC, ln, sec, f"{op.upper()} row, Group {grp} aggregate") + "; also " + src_at(RTC, lnS, "Summary Table", f"Group {grp}"),
                "topology": topo, "tool": "cudaMemcpyAsync (1 GB per GPU, 5 iterations)", "engine": "copy", "op": op,
                "streams": [[x, "mem0"] for x in gg], "bytes": "1 GB", "value": float(cells[col_agg].replace("*", "").split()[0]),
                "metric": "aggregate-gbps", "fit": True,
                "note": ("Group A: 4 GPUs on quadrant Q0 + 4 on Q2; Group B: all 8 under Q3. The page's per-quadrant reading (~73 GB/s per quadrant path) "
                         "is an interpretation; fit the root-complex memory cap from these"),
            })
            F.append({
                "id": f"host-{op}-group{grp}-8gpu-per-gpu", "what": f"{op.upper()} per GPU with all 8 of Group {grp} at once",
                "source": src_at(RTC, ln, sec, f"{op.upper()} row, Group {grp} per-GPU"), "topology": topo,
                "tool": "cudaMemcpyAsync (1 GB per GPU, 5 iterations)", "engine": "copy", "op": op,
                "streams": [[x, "mem0"] for x in gg], "bytes": "1 GB", "value": float(cells[col_per].split()[0]),
                "metric": "mean-per-stream-gbps", "fit": False, "note": "aggregate / 8 (derived)",
            })
    return F


def judgement():
    return [
        ("NCCL ring allreduce algbw/busbw, 1 MB – 1 GB, Group A vs B (busbw 1 GB: 46.44 / 46.48 GB/s)", cite_line(RTC, "### 6. NCCL Ring All-Reduce")),
        ("NCCL ring allreduce time and busbw, 4 KB – 4 MB, Group A vs B (4 KB: 23.93 / 17.34 µs)", cite_line(RTC, "### 7. NCCL Ring All-Reduce — small/latency-bound regime")),
        ("TL;DR and Summary Table rows for NCCL AR (busbw 1 GB, 4 KB, 16 KB, 256 KB, 4 MB)", cite_line(RTC, "| NCCL allreduce busbw 1 GB (GB/s) |")),
        ("Practical inference implications (estimates, no measurements)", cite_line(RTC, "### Practical inference implications")),
    ]


def topologies():
    src = (f"{RTX6KPRO}@{SHORT} {RTC} (test topology, methodology, results); {W16} (switch/cabling details, BIOS of the current stack); "
           f"{MS} § MaxReadReq (MPS on this board); NVIDIA RTX PRO 6000 Blackwell datasheet")
    plat = ("Linux 6.18.24, NVIDIA 595.58.03, iommu=off, ACS Request-Redirect disabled at boot (" + RTC + " § Test Topology); "
            "BIOS not stated on that page (12.09 per " + W16 + " for this stack)")
    model = "(Workstation/Server Edition mix)"
    com_a = ("Group A of the WRX90 16-GPU box (3-root cabling): SW1 (GPU 0-3) on root port 00:01.1 (quadrant Q0) and\n"
             "SW2 (GPU 4-7) on 40:01.1 (Q2). The other eight GPUs of the box are idle in these measurements and left out.\n")
    com_b = ("Group B of the WRX90 16-GPU box (3-root cabling): SW3 (GPU 8-11) on root port e0:01.1 and SW4 (GPU 12-15)\n"
             "on e0:03.1, both on quadrant Q3. The other eight GPUs of the box are idle in these measurements and left out.\n")
    a = four_switch("WRX90 + TR PRO 7955WX, 8 GPUs on 2 c-payne PM50100 switches on separate root complexes (Group A)",
                    CABLING["3root"], plat, src, com_a, model, sw_subset=(1, 2))
    b = four_switch("WRX90 + TR PRO 7955WX, 8 GPUs on 2 c-payne PM50100 switches sharing one root complex (Group B)",
                    CABLING["3root"], plat, src, com_b, model, sw_subset=(3, 4))
    return [(TOPO, a), (T_B, b)]
