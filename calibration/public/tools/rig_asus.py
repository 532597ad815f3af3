"""R2: ASUS ESC8000A-E13P, 2x EPYC 9575F, 2x Broadcom PEX890xx (2 VS each),
8x RTX PRO 6000 Server, ACS off."""

from common import *

RIG = "asus-esc8000a-e13p"
TOPO = "topologies/public/asus-esc8000a-e13p.toml"
A = "hardware/asus-esc8000a-e13p-broadcom-switches.md"
CR = "hardware/collapse-report.md"
PB = "hardware/pcie-bandwidth.md"
REPRO = "logs/asus-report/reproduce_bug.py"
GPUS = [g(i) for i in range(8)]
VS = {0: "vs0", 1: "vs0", 2: "vs1", 3: "vs1", 4: "vs2", 5: "vs2", 6: "vs3", 7: "vs3"}
SCRIPT = "page § Reproduction Steps, Test 1"


def rel(i, j):
    if VS[i] == VS[j]:
        return "same virtual switch"
    if (i < 4) == (j < 4):
        return "same chip, across virtual switches (switch-internal fabric)"
    return "across chips (uplink, root ports, xGMI)"


def figures():
    F = []
    # ---- p2pmark Sequential NxN (the 8x8 unidirectional matrix)
    sec = "Full 8×8 Unidirectional Bandwidth Matrix (GB/s)"
    rows = matrix_cells(A, sec, [f"GPU{i}:" for i in range(8)])
    for i in range(8):
        ln, cells = rows[f"GPU{i}:"]
        assert len(cells) == 8, cells
        for j in range(8):
            if i == j:
                assert cells[j] == "—"
                continue
            F.append({
                "id": f"uni-{i}-{j}",
                "what": f"unidirectional P2P copy GPU{i}→GPU{j} alone ({rel(i, j)})",
                "source": src_at(A, ln, sec, f"row GPU{i} column GPU{j}"),
                "tool": "p2pmark 3c39f36 (Sequential NxN; inferred from the output format)",
                "engine": "copy", "op": "write",
                "streams": [[g(i), g(j)]],
                "bytes": "64 MiB", "value": float(cells[j]), "metric": "per-stream-gbps",
                "fit": True,
                "note": ("cudaMemcpyPeerAsync on a stream of the source GPU (push), 20 timed copies, host clock; "
                         "the matrix has p2pmark's 'Dst→ / GPUn:' layout and the page says every p2pmark result is 3c39f36; ACS off"),
            })
    # ---- p2pBandwidthLatencyTest bidirectional matrix
    sec = "Bidirectional P2P=Enabled Bandwidth Matrix (ACS disabled, all links Gen5 x16)"
    rows = matrix_cells(A, sec, [str(i) for i in range(8)])
    for i in range(8):
        ln, cells = rows[str(i)]
        assert len(cells) == 8, cells
        for j in range(8):
            if i == j:
                continue
            F.append({
                "id": f"bidi-{i}-{j}",
                "what": f"bidirectional P2P GPU{i}↔GPU{j}, both directions at once ({rel(i, j)})",
                "source": src_at(A, ln, sec, f"row {i} column {j}"),
                "tool": "p2pBandwidthLatencyTest",
                "engine": "copy", "op": "bidirectional",
                "streams": [[g(i), g(j)], [g(j), g(i)]],
                "bytes": "160 MB", "value": float(cells[j]), "metric": "aggregate-gbps",
                "fit": True,
                "note": ("sum of both directions; each direction is a cudaMemcpyPeerAsync push on its source GPU's stream, "
                         "5 copies of 40,000,000 int32 (sample default, size not restated on the page); ACS off"),
            })
    # ---- latency ranges (tool not stated)
    same = [(i, j) for i in range(8) for j in range(8) if i != j and (i < 4) == (j < 4)]
    cross = [(i, j) for i in range(8) for j in range(8) if (i < 4) != (j < 4)]
    sec = "P2P Latency (microseconds)"
    for name, pairs, needle, lo, hi in (("same-numa", same, "| Same NUMA |", "0.71", "0.74"),
                                        ("cross-numa", cross, "| Cross NUMA", "1.27", "1.36")):
        for bound, val in (("min", lo), ("max", hi)):
            F.append({
                "id": f"latency-{name}-{bound}",
                "what": f"P2P latency, {bound} over {'same-NUMA' if name == 'same-numa' else 'cross-NUMA'} pairs, each pair alone",
                "source": cite(A, needle, sec, "Latency column", val, after="### P2P Latency"),
                "tool": "not stated (values match p2pmark 3c39f36 --latency: 128-byte remote reads)",
                "engine": "unknown", "op": "read",
                "pattern": one_at_a_time(pairs, bound),
                "value": float(val), "metric": "round-trip-latency-us",
                "fit": False,
                "note": ("range over unnamed pairs and tool not stated: the page's reproduction runs "
                         "`p2pmark_old --latency` and the scale (0.71 µs same NUMA) matches p2pmark's remote-read latency "
                         "on other rigs, not p2pBandwidthLatencyTest's 0.4–0.5 µs"),
            })
    # ---- collapse test (torch harness; the page's Test 1 and logs/asus-report/reproduce_bug.py)
    sec = "PEX890xx Posted-Write Arbitration Bug › Measured Results"
    rows = [
        ("1flow-0-4", "1 flow GPU0→GPU4 (across chips)", [(0, 4)], "| 1 flow: GPU0→GPU4 |", "36.8", "40.1"),
        ("2flow-diff-vs", "2 flows from different virtual switches: GPU0→GPU4 + GPU2→GPU6", [(0, 4), (2, 6)],
         "| 2 flows OK: GPU0→GPU4 + GPU2→GPU6 (diff VS) |", "76.4", "44.8"),
        ("2flow-same-vs-2roots", "COLLAPSE trigger: 2 GPUs of VS0 to GPUs behind 2 root ports: GPU0→GPU4 + GPU1→GPU6",
         [(0, 4), (1, 6)], "| **2 flows COLLAPSE: GPU0→GPU4 + GPU1→GPU6 (same VS)** |", "2.7", "51.1"),
        ("4flow-same-vs-4dst", "COLLAPSE trigger: GPU0,1 (VS0) → GPU4,5,6,7", [(0, 4), (0, 5), (1, 6), (1, 7)],
         "| 4 flows collapse: GPU0,1→GPU4,5,6,7 |", "2.7", "51.3"),
        ("16flow-a-to-b", "16 flows: every GPU of chip A (0-3) to every GPU of chip B (4-7)",
         [(s, d) for s in range(4) for d in range(4, 8)], "| 16 flows cross-chip |", "7.7", "9.0"),
        ("56flow-all", "56 flows: all-to-all over 8 GPUs", [(s, d) for s in range(8) for d in range(8) if s != d],
         "| 56 flows all-to-all |", "36.5", "53.9"),
    ]
    for fid, what, pairs, needle, w, r in rows:
        assumed = None
        if fid == "4flow-same-vs-4dst":
            assumed = ("pairs (0,4)+(0,5)+(1,6)+(1,7) as collapse-report.md § Per-platform trigger thresholds "
                       "lists them for this row")
        elif fid in ("16flow-a-to-b", "56flow-all"):
            assumed = "pair list and order assumed (s-major, as the repo's scripts build all-pairs lists); the page gives only the description"
        for mode, v in (("write", w), ("read", r)):
            F.append(torch_fig(
                f"collapse-test-{fid}-{mode}", what + (" — posted writes" if mode == "write" else " — labelled non-posted read"),
                cite(A, needle, sec, "Posted Write column" if mode == "write" else "Non-Posted Read column",
                     v, after="### Measured Results"),
                pairs, mode, float(v), SCRIPT, 20, assumed_pairs=assumed))
    # the 4-flow row restated in collapse-report (same number)
    sec = "What Does NOT Trigger Collapse"
    for fid, what, pairs, needle, v in (
        ("same-gpu-2roots", "one GPU to two root ports: GPU0→GPU4 + GPU0→GPU6", [(0, 4), (0, 6)],
         "| Same GPU → multiple root ports", "36.6"),
        ("same-vs-same-root", "VS0 → one root port: GPU0→GPU4 + GPU1→GPU5", [(0, 4), (1, 5)],
         "| Same VS → same root port", "40.3"),
        ("reverse", "reverse direction: GPU4→GPU0 + GPU6→GPU1", [(4, 0), (6, 1)],
         "| Reverse direction", "51.2"),
    ):
        F.append(torch_fig(f"no-collapse-{fid}", what + " — posted writes",
                           cite(A, needle, sec, "Write BW column", v, after="### What Does NOT Trigger Collapse"),
                           pairs, "write", float(v), SCRIPT, 20,
                           note="control: does not collapse"))
    F.append({
        "id": "no-collapse-p2p-disabled-shm",
        "what": "collapse pattern with P2P disabled (staged through host memory)",
        "source": cite(A, "| P2P disabled (SHM through host memory)", "What Does NOT Trigger Collapse", "Write BW column", "2.7"),
        "tool": "not stated (P2P disabled; SHM)", "engine": "unknown", "op": "write",
        "streams": pairs_streams([(0, 4), (1, 6)]), "value": 2.7, "metric": "aggregate-gbps", "fit": False,
        "note": ("P2P disabled: data staged through host memory (GPU→host→GPU), a different path from every other figure; "
                 "pairs assumed to be the trigger pattern; the page reports the same 2.7 GB/s collapse"),
    })
    # ---- same-chip scaling
    sec = "Multi-Flow Contention Analysis › Same-Chip Scaling (No Uplink Used)"
    for fid, what, pairs, needle, v in (
        ("1", "1 flow GPU0→GPU1", [(0, 1)], "| 1 | GPU0→GPU1 |", "54.1"),
        ("2", "2 flows GPU0→GPU1 + GPU2→GPU3", [(0, 1), (2, 3)], "| 2 | GPU0→GPU1 + GPU2→GPU3 |", "108.6"),
        ("4-bidir", "4 flows: both pairs bidirectional (0↔1, 2↔3)", [(0, 1), (1, 0), (2, 3), (3, 2)],
         "| 4 | Both pairs bidir |", "203.9"),
        ("12-all", "12 flows: all-to-all over GPU0-3 (chip A)", [(s, d) for s in range(4) for d in range(4) if s != d],
         "| 12 | 4-GPU all-to-all |", "153"),
    ):
        F.append(torch_fig(f"same-chip-{fid}", what, cite(A, needle, sec, "Total BW column", v,
                                                          after="### Same-Chip Scaling"),
                           pairs, "write", float(v), "tool not stated on the page; its Test 1 harness assumed", 20,
                           assumed_pairs=("pair order assumed" if fid in ("4-bidir", "12-all") else None)))
    sec = "Multi-Flow Contention Analysis › Cross-Chip Scaling (Uplinks Used)"
    for fid, what, pairs, needle, v, assumed in (
        ("1", "1 flow GPU0→GPU4", [(0, 4)], "| 1 | GPU0→GPU4 |", "37.7", None),
        ("2-diff-uplink", "2 flows on different uplinks: GPU0→GPU4 + GPU2→GPU6", [(0, 4), (2, 6)],
         "| 2 | Different uplinks", "80.2", None),
        ("2-same-uplink", "2 flows on the same uplink to different targets: GPU0→GPU4 + GPU1→GPU6 (collapse)",
         [(0, 4), (1, 6)], "| **2** | **Same uplink, diff targets", "2.7", None),
        ("4-1to1", "4 flows, 1:1 mapping: GPU0→4, 1→5, 2→6, 3→7", [(0, 4), (1, 5), (2, 6), (3, 7)],
         "| 4 | 1:1 mapping all pairs |", "83.2", "pairs assumed: '1:1 mapping all pairs' read as GPUi→GPUi+4"),
        ("8-bidir", "8 flows: the 1:1 pairs in both directions", [(0, 4), (4, 0), (1, 5), (5, 1), (2, 6), (6, 2), (3, 7), (7, 3)],
         "| 8 | All pairs bidir |", "82.2", "pairs assumed: GPUi↔GPUi+4"),
        ("16-a-to-b", "16 flows: all of chip A to all of chip B", [(s, d) for s in range(4) for d in range(4, 8)],
         "| 16 | All A→B |", "7.4", "pair order assumed (s-major)"),
    ):
        F.append(torch_fig(f"cross-chip-{fid}", what, cite(A, needle, sec, "Total BW column", v,
                                                           after="### Cross-Chip Scaling"),
                           pairs, "write", float(v), "tool not stated on the page; its Test 1 harness assumed", 20,
                           assumed_pairs=assumed,
                           note=("same pattern as collapse-test-1flow-0-4-write (36.8) measured in another run"
                                 if fid == "1" else
                                 "same pattern as collapse-test-2flow-diff-vs-write (76.4) measured in another run"
                                 if fid == "2-diff-uplink" else
                                 "same pattern as collapse-test-16flow-a-to-b-write (7.7) measured in another run"
                                 if fid == "16-a-to-b" else "")))
    sec = "GPU DS Port Is the Bandwidth Limit"
    F.append(torch_fig("ds-port-same-gpu-2", "2 flows from one GPU: GPU0→GPU4 + GPU0→GPU2",
                       cite(A, "| 2 flows from SAME GPU", sec, "Total BW column", "42.8", after="### GPU DS Port"),
                       [(0, 4), (0, 2)], "write", 42.8, "tool not stated on the page; its Test 1 harness assumed", 20))
    F.append(torch_fig("ds-port-diff-gpu-2", "2 flows from different GPUs: GPU0→GPU4 + GPU1→GPU2",
                       cite(A, "| 2 flows from DIFFERENT GPU", sec, "Total BW column", "106.3", after="### GPU DS Port"),
                       [(0, 4), (1, 2)], "write", 106.3, "tool not stated on the page; its Test 1 harness assumed", 20,
                       fit=False,
                       note=("inconsistent with the page's own single-flow GPU0→GPU4 (36.8/37.7 GB/s) and GPU1→GPU2 (53.4): "
                             "106.3 needs ≥52.9 GB/s on the cross-chip flow")))
    F.append({
        "id": "ds-port-4-diff-gpus", "what": "4 flows from 4 different GPUs (pairs not stated)",
        "source": cite(A, "| 4 flows, all different GPU |", sec, "Total BW column", "206.8", after="### GPU DS Port"),
        "tool": "not stated", "engine": "copy", "op": "write",
        "pattern": {"kind": "unstated", "gpus": []}, "value": 206.8, "metric": "aggregate-gbps", "fit": False,
        "note": "which 4 flows is not stated; 206.8 implies all four stayed on one chip (4 × ~51.7)",
    })
    F.append({
        "id": "ds-port-4-from-gpu0", "what": "4 flows all from GPU0 (destinations not stated)",
        "source": cite(A, "| 4 flows, all from GPU0 |", sec, "Total BW column", "47.6", after="### GPU DS Port"),
        "tool": "not stated", "engine": "copy", "op": "write",
        "pattern": {"kind": "one-to-many", "source": "gpu0", "gpus": []}, "value": 47.6, "metric": "aggregate-gbps",
        "fit": False, "note": "destinations not stated (the GPU0 link is the stated limit)",
    })
    # ---- ACS table and Gen2-uplink experiment, link-map summaries
    sec = "ACS (Access Control Services) › Impact: Before vs After ACS Disable"
    for pair, rel_, needle, on, off in (((0, 1), "same VS", "| GPU0↔GPU1 | PIX (same VS)", "~50", "~103"),
                                        ((0, 2), "same chip, cross-VS", "| GPU0↔GPU2 | Same chip, cross-VS", "~103", "~103"),
                                        ((0, 4), "cross-chip", "| GPU0↔GPU4 | Cross-chip", "~95", "~95")):
        i, j = pair
        for state, v in (("acs-on", on), ("acs-off", off)):
            F.append({
                "id": f"bidi-{state}-{i}-{j}", "what": f"bidirectional GPU{i}↔GPU{j} ({rel_}), ACS {'on' if state == 'acs-on' else 'off'}",
                "source": cite(A, needle, sec, f"ACS {'ON (default)' if state == 'acs-on' else 'OFF'} column", v),
                "tool": "not stated (bidirectional P2P, presumably p2pBandwidthLatencyTest)", "engine": "copy",
                "op": "bidirectional", "streams": [[g(i), g(j)], [g(j), g(i)]],
                "value": float(v.strip("~")), "metric": "aggregate-gbps", "fit": False,
                "note": ("ACS on routes P2P through the root port: a different routing from the modelled (ACS off) box"
                         if state == "acs-on" else "approximate (~) restatement of the bidirectional matrix"),
            })
    sec = "Proving P2P Goes Through Switch Fabric"
    for fid, pair, needle, v5, v2 in (("pix", (0, 1), "| Same-switch (PIX) |", "103", "103"),
                                      ("cross-vs", (0, 2), "| Same-chip cross-VS |", "103", "103"),
                                      ("cross-chip", (0, 4), "| Cross-chip |", "95", "14")):
        i, j = pair
        for state, v in (("gen5", v5), ("gen2-uplink", v2)):
            F.append({
                "id": f"uplink-degrade-{fid}-{state}",
                "what": f"bidirectional GPU{i}↔GPU{j} with the VS0 uplink (root port 10:01.1) at {'Gen5' if state == 'gen5' else 'Gen2'}",
                "source": cite(A, needle, sec, f"{'Gen5 (normal)' if state == 'gen5' else 'Gen2 (degraded uplink)'} column", v,
                               after="## Proving P2P"),
                "tool": "p2pBandwidthLatencyTest (page § Test 2)", "engine": "copy", "op": "bidirectional",
                "streams": [[g(i), g(j)], [g(j), g(i)]], "value": float(v), "metric": "aggregate-gbps", "fit": False,
                "note": ("pair per tier not stated (GPU pair assumed); the Gen2 state needs a topology with the VS0 uplink at Gen2"
                         if state == "gen2-uplink" else "pair per tier not stated (GPU pair assumed); rounded restatement of the matrix"),
            })
    sec = "Complete Link Map › Measured Bandwidth Per Link"
    for fid, needle, uni, bidi, what in (("ds-port", "| GPU ↔ switch DS port |", "53.5", "101", "GPU ↔ switch downstream port"),
                                         ("fabric", "| Switch internal fabric (cross-VS) |", "53.6", "101", "switch-internal fabric across VS"),
                                         ("cross-chip", "| Cross-chip end-to-end |", "38", "70", "cross-chip end to end")):
        for kind, v in (("uni", uni), ("bidi", bidi)):
            F.append({
                "id": f"link-map-{fid}-{kind}", "what": f"link-map summary: {what}, {'unidirectional' if kind == 'uni' else 'bidirectional'}",
                "source": cite(A, needle, sec, f"{'Unidirectional' if kind == 'uni' else 'Bidirectional'} column", v),
                "tool": "not stated", "engine": "copy", "op": "write" if kind == "uni" else "bidirectional",
                "pattern": {"kind": "unstated", "gpus": []}, "value": float(v),
                "metric": "per-stream-gbps" if kind == "uni" else "aggregate-gbps", "fit": False,
                "note": ("summary row; pairs not stated" +
                         ("; contradicts the bidirectional matrix (93–96 GB/s across chips)" if fid == "cross-chip" and kind == "bidi" else "")),
            })
    # ---- p2pmark 3c39f36 (4 GPUs = CUDA_VISIBLE_DEVICES=0,1,2,3; 8 GPUs)
    secA = "p2pmark Benchmark Results › Comparison with Reference Systems"
    secP = "P2P Bandwidth Measurements › p2pmark Scores"
    for n, lnA_needle, lnP_needle in ((4, "| **This system (ACS off)** | 4 |", "| [voipmonitor (ASUS ESC8000A-E13P, Broadcom, ACS off)](asus-esc8000a-e13p-broadcom-switches.md) | 0.88 |"),
                                      (8, "| **This system (ACS off)** | 8 |", "| [voipmonitor (ASUS ESC8000A-E13P, Broadcom, ACS off)](asus-esc8000a-e13p-broadcom-switches.md) | 0.85 (53.7")):
        gl = [g(i) for i in range(n)]
        link = "0.88" if n == 4 else "0.85"
        dense = "0.58" if n == 4 else "0.12"
        meas = "127.6" if n == 4 else "51.7"
        ideal = "221.0" if n == 4 else "429.2"
        lat = "2.12" if n == 4 else "7.39"
        cA = lambda cell, v: cite(A, lnA_needle, secA, cell, v)
        cP = lambda cell, v: cite(PB, lnP_needle, secP + f" ({n} GPUs)", cell, v)
        base = {"tool": "p2pmark 3c39f36", "engine": "copy"}
        F.append(dict(base, id=f"p2pmark-{n}gpu-link-score", what=f"p2pmark PCIe link score, {n} GPUs",
                      source=cA("PCIe Score column", link), op="read",
                      pattern={"kind": "many-to-one", "sink": "each", "gpus": gl}, value=float(link), metric="score", fit=False,
                      note="score = mean over GPUs of (GPU reads from all peers at once, alone) / 63 GB/s"))
        F.append(dict(base, id=f"p2pmark-{n}gpu-dense-score", what=f"p2pmark dense interconnect score, {n} GPUs",
                      source=cA("Interconnect Score column", dense), op="read",
                      pattern={"kind": "all-to-all", "gpus": gl}, value=float(dense), metric="score", fit=False,
                      note="score = all-GPUs-read-all-peers total / sum of the single-reader totals"))
        F.append(dict(base, id=f"p2pmark-{n}gpu-all-read-all", what=f"p2pmark: every GPU reads from every peer at once, {n} GPUs",
                      source=cP("Dense Interconnect Score column, measured", meas) + "; also " + cA("Interconnect Score column", str(round(float(meas)))),
                      op="read", pattern={"kind": "all-to-all", "gpus": gl}, bytes="64 MiB", value=float(meas),
                      metric="aggregate-gbps", fit=True,
                      note=("p2pmark Test 3: each GPU pulls from each peer with cudaMemcpyPeerAsync on its own stream (one stream per peer), "
                            "100 copies each; each GPU's rate = its bytes / its own wall time; value = sum of the per-GPU rates"
                            + ("; GPUs 0-3 (CUDA_VISIBLE_DEVICES=0,1,2,3 per § Test 3)" if n == 4 else ""))))
        F.append(dict(base, id=f"p2pmark-{n}gpu-ideal", what=f"p2pmark ideal: sum over GPUs of one GPU reading all peers alone, {n} GPUs",
                      source=cP("Dense Interconnect Score column, ideal", ideal), op="read",
                      pattern={"kind": "many-to-one", "sink": "each", "gpus": gl}, bytes="64 MiB", value=float(ideal),
                      metric="aggregate-gbps", fit=False,
                      note="sum of n separate single-reader runs (per-reader values not published)"))
        if n == 8:
            F.append(dict(base, id="p2pmark-8gpu-link-avg", what="p2pmark: mean single-reader bandwidth (one GPU reads all 7 peers at once, alone), 8 GPUs",
                          source=cite(PB, lnP_needle, secP + " (8 GPUs)", "PCIe Link Score column", "53.7"), op="read",
                          pattern={"kind": "many-to-one", "sink": "each", "gpus": gl}, bytes="64 MiB", value=53.7,
                          metric="aggregate-gbps", fit=False,
                          note="mean over readers of separate runs (per-reader values not published); = 429.2 / 8"))
        F.append(dict(base, id=f"p2pmark-{n}gpu-effective-latency", what=f"p2pmark effective latency: all GPUs read all peers at once, {n} GPUs",
                      source=cA("Eff. Latency column", lat) + "; also " + cP("Effective Latency column", lat),
                      op="read", pattern={"kind": "all-to-all", "gpus": gl}, bytes="128 B", value=float(lat),
                      metric="round-trip-latency-us", fit=True,
                      tool="p2pmark 3c39f36 --latency", engine="sm",
                      note=("each GPU runs one single-thread kernel per peer (ld.global.cv of 32 × 4 B, 10000 times); "
                            "value = max over GPUs of (wall time of its kernels / 320,000 loads)")))
    return F


def judgement():
    return [
        ("custom PCIe allreduce vs NCCL, 4 GPUs fp16, 256 B – 32 MB (µs)", cite_line(A, "### AllReduce: Custom vs NCCL (4 GPU, fp16)")),
        ("custom PCIe allreduce vs NCCL, 8 GPUs fp16, 256 B – 32 MB (µs; 32 MB: 333806 vs 2715)", cite_line(A, "### AllReduce: Custom vs NCCL (8 GPU, fp16)")),
        ("NCCL allreduce busbw, 32 MB, 4 GPUs: default 30.3 GB/s, NCCL_P2P_LEVEL=SYS 39.3 GB/s", cite_line(A, "AllReduce BusBw (32M, 4 GPU)")),
        ("PCIe oneshot vs NCCL allreduce crossover, 4 GPUs bf16, 1 KB – 1 MB (µs), crossover 512 KB", cite_line(A, "### Raw AllReduce Crossover")),
        ("Qwen3.5-397B TP=4 decode throughput, PCIe oneshot vs NCCL, and NCCL_P2P_LEVEL=SYS effect (inference, tok/s)", cite_line(A, "### End-to-End Decode Throughput")),
    ]


def topology():
    t = Topo(
        name="ASUS ESC8000A-E13P: 2x EPYC 9575F, 2x Broadcom PEX890xx (2 virtual switches each), 8x RTX PRO 6000 Blackwell Server Edition, ACS off",
        source=(f"{RTX6KPRO}@{SHORT} {A} (topology, link map, MaxReadReq, 10-bit tags, collapse); {CR} § Per-platform trigger thresholds; "
                f"{RTX6KPRO}@{SHORT} logs/asus-report/ (dmidecode: BIOS 1104, 24 DIMMs DDR5-6400; lspci; nvidia-smi); "
                "NVIDIA RTX PRO 6000 Blackwell Server Edition datasheet (188 SMs, 1792 GB/s GDDR7, PCIe Gen5 x16)"),
        platform=("ACS ReqRedir/CmpltRedir cleared on the AMD root ports and the Broadcom downstream ports (setpci, page § ACS); "
                  "switch MaxReadReq fixed at 128 B, 10-bit tag requester disabled (read-only switch registers). "
                  "BIOS/kernel/driver of the measurements are not stated on the page; logs/asus-report (committed 2026-04-08, "
                  "after the page's last change on 2026-03-20, from a boot where VS0 sits under root port 00:01.1 rather than 10:01.1) "
                  "show BIOS 1104 (2025-10-23), Linux 6.17.0-20-generic, NVIDIA 595.58.03, CUDA 13.2, amd_iommu=off iommu=off, mitigations=off"),
        comment=("Two Broadcom PEX890xx chips, each split into two virtual switches (VS) with one Gen5 x16 uplink each;\n"
                 "two GPUs per VS. Each uplink lands on its own root port / host bridge: 10:01.1 and 70:01.1 on\n"
                 "socket 0, 80:01.1 and f0:01.1 on socket 1. Cross-VS traffic on one chip stays in the chip; cross-chip\n"
                 "traffic goes uplink -> root complex -> (xGMI) -> root complex -> uplink. Posted writes from >= 2 GPUs of\n"
                 "one VS to >= 2 root ports collapse (see [node.collapse]). Latencies and P2P caps are left to be fitted\n"
                 "from calibration/public/asus-esc8000a-e13p/figures.toml."),
    )
    bus = {0: "16:00.0", 1: "17:00.0", 2: "75:00.0", 3: "76:00.0", 4: "84:00.0", 5: "85:00.0", 6: "F4:00.0", 7: "F5:00.0"}
    for i in range(8):
        t.gpu(i, "Server Edition", f"GPU{i} at {bus[i]}, NUMA {0 if i < 4 else 1} ({A} § Physical PCIe Topology, § System Overview)")
    col = {"min_sources": 2, "min_targets": 2, "rate_gbps": 2.7, "per": "port",
           "note": ("Broadcom PEX890xx, ACS off: >= 2 GPUs of this VS posting writes through its uplink to destinations behind >= 2 root ports "
                    "fall to 2.7 GB/s together (2 flows GPU0->4 + GPU1->6, and 4 flows GPU0,1->4,5,6,7: 2.7 GB/s aggregate; from 36.8 for one flow), "
                    f"{A} § PEX890xx Posted-Write Arbitration Bug and {CR} § Per-platform trigger thresholds. Not triggered by one GPU to two "
                    "root ports (36.6), one VS to one root port (40.3), or two VSs (76.4). 16 flows chip A -> chip B (both VSs collapsed) gave 7.4-7.7 GB/s "
                    "aggregate, i.e. ~3.7-3.9 per port. window_ns not measured (default).")}
    for vs, chip, rp in (("vs0", "pexA", "10:01.1"), ("vs1", "pexA", "70:01.1"), ("vs2", "pexB", "80:01.1"), ("vs3", "pexB", "f0:01.1")):
        t.node(vs, "switch", chip=chip, mrrs=128, tags_10bit=False,
               note=(f"virtual switch of Broadcom PEX890xx chip {chip[-1]}, uplink to root port {rp}; MaxReadReq fixed at 128 B and "
                     f"10BitTagReq- on switch ports, registers read-only ({A} § Hardware Configuration Issues); port-to-port latency not published (fit)"),
               collapse=col)
    for rc, sock, rp in (("rc10", 0, "10:01.1"), ("rc70", 0, "70:01.1"), ("rc80", 1, "80:01.1"), ("rcf0", 1, "f0:01.1")):
        t.node(rc, "root_complex", socket=sock,
               note=(f"host bridge of root port {rp} (EPYC 9575F socket {sock}; each uplink has its own host bridge, lspci in logs/asus-report); "
                     "latency and P2P caps not published (fit)"))
    for s in (0, 1):
        t.node(f"iod{s}", "cpu_interconnect", socket=s, note=f"I/O die of EPYC 9575F socket {s}; crossing cost not published (fit)")
    for s in (0, 1):
        t.node(f"mem{s}", "host_memory", socket=s, note=f"DDR5 of socket {s} (NUMA {s})")
    for i in range(8):
        t.pcie5(g(i), VS[i], mrrs=512,
                note=f"GPU{i} Gen5 x16 to {VS[i]}; GPU MaxReadReq 512 B ({A} § MaxReadReq Locked at 128 Bytes); MPS not stated")
    for vs, rc in (("vs0", "rc10"), ("vs1", "rc70"), ("vs2", "rc80"), ("vs3", "rcf0")):
        t.pcie5(vs, rc, note=f"{vs} uplink, Gen5 x16, one per VS, not aggregatable ({A} § Key Architecture Points); MPS not stated")
    t.link("vs0", "vs1", "switch_fabric",
           note=f"chip A internal fabric between its two VSs: GPU0->GPU2 runs 53.8 GB/s, as within a VS ({A} § Full 8×8 matrix); capacity not published")
    t.link("vs2", "vs3", "switch_fabric",
           note=f"chip B internal fabric between its two VSs: GPU4->GPU6 53.7 GB/s ({A} § Full 8×8 matrix); capacity not published")
    for rc, s in (("rc10", 0), ("rc70", 0), ("rc80", 1), ("rcf0", 1)):
        t.link(rc, f"iod{s}", "die", note=f"{rc} on the socket {s} I/O die")
    t.link("iod0", "iod1", "cpu", protocol="xGMI", bandwidth_gbps=175.0,
           note=(f"xGMI between the sockets: the page measures 350 GB/s bidirectional with CPU memcpy ({A} § Complete Link Map, "
                 "mermaid 'xGMI 350 GB/s bidir'), taken as 175 per direction; link count and width not stated. GPU P2P limits across it "
                 "(p2p_bandwidth_gbps, knee) are left to be fitted from the cross-chip figures"))
    for s in (0, 1):
        t.link(f"mem{s}", f"iod{s}", "memory", bandwidth_gbps=614.4,
               note=f"12 DIMMs at 6400 MT/s on socket {s} (logs/asus-report/dmidecode.log: CPU{s+1}_DIMM_A1..L1, Configured Memory Speed 6400 MT/s) = 12 x 6400 MT/s x 8 B")
    return t
