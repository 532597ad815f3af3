"""R1: WRX90 + TR PRO 7955WX, 4x c-payne PM50100, 16x RTX PRO 6000 (4 GPUs per
switch), three cablings (2-, 3-, 4-root) and two software stacks."""

from common import *
from wrx90 import *

RIG = "wrx90-pm50100-16gpu"
TP = "topologies/public/"
TOPO = TP + "wrx90-pm50100-16gpu.toml"            # 3-root, current stack, no collapse
T_OLD = TP + "wrx90-pm50100-16gpu-collapse.toml"  # 3-root, old stack, collapse
T_2R = TP + "wrx90-pm50100-16gpu-2root.toml"
T_4R = TP + "wrx90-pm50100-16gpu-4root.toml"
T_4RC = TP + "wrx90-pm50100-16gpu-4root-collapse.toml"
VT = {"2root": T_2R, "3root": TOPO, "4root": T_4R}
GPUS = [g(i) for i in range(16)]
OLD = "bab3196ba8e19b24cc6f9f0d25f2ba8d2b1d5f7b"   # first version of the 16-GPU page (old stack)
SW = {1: [0, 1, 2, 3], 2: [4, 5, 6, 7], 3: [8, 9, 10, 11], 4: [12, 13, 14, 15]}
ISO = "scripts/collapse_isolation.py"
EXA = "scripts/collapse_exact_repro.py"
ESC = "scripts/collapse_4root_escalate.py"


def _old_commit():
    import subprocess
    return subprocess.run(["git", "-C", GIT, "rev-parse", "bab3196"], check=True, capture_output=True, text=True).stdout.strip()


def two_dst(src, d1, d2):
    return [(SW[src][0], SW[d1][0]), (SW[src][1], SW[d2][0])]


def three_dst(src):
    others = [s for s in (1, 2, 3, 4) if s != src]
    return [(SW[src][k], SW[others[k]][0]) for k in range(3)]


def figures():
    old = _old_commit()
    F = []
    sec_sum = "Comparison Summary Across Variants"
    # ---- per-variant summary rows
    for v, col in (("2root", 1), ("3root", 2), ("4root", 3)):
        ln, cells = table_row(W16, "| Single-pair BW (PIX) |", after="## Comparison Summary")
        F.append({
            "id": f"{v}-pix-single", "what": f"single pair within one switch, {v} cabling",
            "source": src_at(W16, ln, sec_sum, f"row Single-pair BW (PIX), column {v}") + "; also "
            + cite(W16, "| Single pair, same switch (PIX) |", "Single-Pair P2P Bandwidth", "Result column", "52–54"),
            "topology": VT[v], "tool": "torch copy_ (256 MB, 50 iterations)", "engine": "copy", "op": "write",
            "pattern": one_at_a_time([(a, b) for s in SW.values() for a in s for b in s if a != b], "approximate"),
            "bytes": "256 MiB", "value": float(cells[col].strip("~ GB/s")), "metric": "per-stream-gbps", "fit": False,
            "note": ("approximate (~53; the single-pair section gives 52–54 over unnamed pairs); the same rig on the same stack "
                     f"gives 56.2–56.3 for every pair in {RTC} § 1, so the two disagree"),
        })
        ln, cells = table_row(W16, "| 2-pair uplink saturation (src→1 dst) |", after="## Comparison Summary")
        F.append(torch_fig(f"{v}-uplink-2pair", f"2 pairs SW1→SW2 (one source switch, one destination switch), {v} cabling",
                           src_at(W16, ln, sec_sum, f"row 2-pair uplink saturation, column {v}") + "; also "
                           + cite(W16, "| 2 pairs, same src switch → same dst switch |", "Single-Pair P2P Bandwidth", "Result column", "56"),
                           [(0, 4), (1, 5)], "write", float(cells[col].split()[0]), "256 MB, per § Single-Pair P2P Bandwidth", 50,
                           topology=VT[v], assumed_pairs="pairs assumed (0,4)+(1,5) as in scripts/collapse_isolation.py STEP 1",
                           note="rounded to 56 in the source"))
        ln, cells = table_row(W16, "| Intra-chip 2-pair (within 4 GPUs of one SW) |", after="## Comparison Summary")
        F.append(torch_fig(f"{v}-intra-switch-2pair", f"2 pairs inside SW1: GPU0→GPU2 + GPU1→GPU3, {v} cabling",
                           src_at(W16, ln, sec_sum, f"row Intra-chip 2-pair, column {v}") + "; also "
                           + cite(W16, "| 2 pairs *within* one chip's 4 GPUs", "Single-Pair P2P Bandwidth", "Result column", "112"),
                           [(0, 2), (1, 3)], "write", float(cells[col].split()[0]), "256 MB, per § Single-Pair P2P Bandwidth", 50,
                           topology=VT[v], note="rounded to 112 in the source"))
    # ---- 1 src -> 2 dst
    sec = "Multi-Pair Concurrency Comparison › 2-pair: 1 source switch → 2 destination switches"
    for src, d1, d2 in ((1, 2, 3), (1, 2, 4), (1, 3, 4), (2, 3, 4), (3, 1, 2), (4, 1, 2), (4, 1, 3)):
        ln, cells = table_row(W16, f"| SW{src} → SW{d1} + SW{d2} |", after="### 2-pair: 1 source switch")
        for v, col in (("2root", 1), ("3root", 2), ("4root", 3)):
            if cells[col] == "(—)":
                continue
            w, r = wr(cells[col])
            for mode, val in (("write", w), ("read", r)):
                F.append(torch_fig(f"{v}-sw{src}-to-sw{d1}+sw{d2}-{mode}",
                                   f"SW{src} → SW{d1} + SW{d2} (2 source GPUs of SW{src}), {v} cabling, {mode.upper()} as labelled",
                                   src_at(W16, ln, sec, f"row SW{src} → SW{d1} + SW{d2}, column {v}, {'WRITE' if mode == 'write' else 'READ'}"),
                                   two_dst(src, d1, d2), mode, float(val), "256 MB", 50, topology=VT[v],
                                   assumed_pairs=f"pairs as {ISO} STEP 2 builds them: first two GPUs of the source switch to the first GPU of each destination switch"))
    # ---- 1 src -> 3 dst
    sec = "Multi-Pair Concurrency Comparison › 3-pair: 1 source switch → 3 destination switches"
    for src in (1, 2, 3, 4):
        others = [s for s in (1, 2, 3, 4) if s != src]
        ln, cells = table_row(W16, f"| SW{src} → SW{others[0]}+SW{others[1]}+SW{others[2]} |", after="### 3-pair")
        for v, col in (("3root", 2), ("4root", 3)):
            if cells[col] in ("not reported", "(saturated)"):
                continue
            w, r = wr(cells[col])
            for mode, val in (("write", w), ("read", r)):
                imp = None
                if float(val) > 63.0:
                    imp = ("physically impossible as an aggregate: every stream crosses SW%d's one Gen5 x16 uplink "
                           "(63 GB/s raw, ~56.4 measured saturated); only the harness's early stop (timed_by) explains it" % src)
                F.append(torch_fig(f"{v}-sw{src}-to-3-{mode}", f"SW{src} → the other three switches (3 source GPUs), {v} cabling, {mode.upper()} as labelled",
                                   src_at(W16, ln, sec, f"row SW{src} → 3 switches, column {v}, {'WRITE' if mode == 'write' else 'READ'}"),
                                   three_dst(src), mode, float(val), "256 MB", 50, topology=VT[v], impossible=imp,
                                   assumed_pairs=f"pairs as {ISO} STEP 3 builds them"))
    # ---- 4-pair fan-out
    sec = "Multi-Pair Concurrency Comparison › 4-pair: 4 source GPUs from one switch fanning out"
    four = {
        "| SW1 → 4×SW2 (1 dst, control) |": ("4x-sw2", [(0, 4), (1, 5), (2, 6), (3, 7)], "control: one destination switch"),
        "| SW1 → 2×SW2 + SW3 + SW4 |": ("2sw2-sw3-sw4", [(0, 4), (1, 5), (2, 8), (3, 12)], ""),
        "| SW1 → SW2 + 2×SW3 + SW4 |": ("sw2-2sw3-sw4", [(0, 4), (1, 8), (2, 9), (3, 12)], ""),
        "| SW1 → SW2 + SW3 + 2×SW4 |": ("sw2-sw3-2sw4", [(0, 4), (1, 8), (2, 12), (3, 13)], ""),
    }
    for needle, (fid, pairs, extra) in four.items():
        ln, cells = table_row(W16, needle, after="### 4-pair")
        for v, col in (("2root", 1), ("3root", 2), ("4root", 3)):
            if cells[col] == "not reported":
                continue
            w, r = wr(cells[col])
            for mode, val in (("write", w), ("read", r)):
                imp = None
                if float(val) > 63.0:
                    imp = ("physically impossible as an aggregate: every stream crosses SW1's one Gen5 x16 uplink "
                           "(63 GB/s raw, ~56.4 measured saturated); only the harness's early stop (timed_by) explains it")
                F.append(torch_fig(f"{v}-4pair-sw1-{fid}-{mode}", f"4 GPUs of SW1 fan out ({needle.strip('| ')}), {v} cabling, {mode.upper()} as labelled",
                                   src_at(W16, ln, sec, f"row {needle.strip('| ')}, column {v}, {'WRITE' if mode == 'write' else 'READ'}"),
                                   pairs, mode, float(val), "256 MB", 50, topology=VT[v], impossible=imp,
                                   assumed_pairs=f"pairs as {ISO} STEP 4 lists them", note=extra))
    # ---- sustained
    sec = "Sustained Behaviour and Buffer-Size Sweep"
    for it in (50, 200, 500, 1000, 2000):
        ln, cells = table_row(W16, f"| {it} |", after="3-pair `SW1 → SW2+SW3+SW4` on the 4-root variant")
        for mode, val in (("write", cells[1]), ("read", cells[2])):
            F.append(torch_fig(f"4root-sustained-sw1-to-3-{it}iter-{mode}", f"SW1 → SW2+SW3+SW4, 4-root cabling, {it} iterations, {mode.upper()} as labelled",
                               src_at(W16, ln, sec, f"row iters {it}, {'WRITE' if mode == 'write' else 'READ'}"),
                               three_dst(1), mode, float(val), "256 MB", it, topology=T_4R,
                               note=("the same pattern at 50 iterations reads 56.3 / 81.1 in § 3-pair: the two tables of the page disagree"
                                     if it == 50 else "")))
    ln = find_line(W16, "3-root variant, same pattern at 200 iters")
    for mode, val in (("write", "56.0"), ("read", "56.2")):
        F.append(torch_fig(f"3root-sustained-sw1-to-3-200iter-{mode}", f"SW1 → SW2+SW3+SW4, 3-root cabling, 200 iterations, {mode.upper()} as labelled",
                           cite(W16, "3-root variant, same pattern at 200 iters", sec, "3-root line", val),
                           three_dst(1), mode, float(val), "256 MB", 200, topology=TOPO))
    # ---- uplink degradation (stated without pair)
    for fid, v, what in (("cross", "52", "cross-switch"), ("cross-gen2", "7", "cross-switch with root port 00:01.1 at Gen2")):
        F.append({
            "id": f"3root-uplink-degrade-{fid}", "what": f"single flow {what} (3-root)",
            "source": cite(W16, "Forcing SW1's root port `00:01.1` to Gen2", "Hardware Notes › Uplink degradation proof (3-root)", "", v),
            "topology": TOPO, "tool": "not stated", "engine": "copy", "op": "write",
            "pattern": {"kind": "unstated", "gpus": []}, "value": float(v), "metric": "per-stream-gbps", "fit": False,
            "note": "pair not stated; the Gen2 state needs a topology with SW1's uplink at Gen2" if fid.endswith("gen2") else "pair not stated; rounded",
        })
    # ---- historical collapse (old stack) and the same patterns now (current stack)
    sec = "Historical: Posted-Write Collapse"
    hist = [
        ("sw1-to-sw2+sw3", "| SW1 → SW2(`40`) + SW3(`e0`) |", [(0, 4), (1, 8)], "11.6", "52.9"),
        ("sw1-to-sw2+sw4", "| SW1 → SW2(`40`) + SW4(`e0`) |", [(0, 4), (1, 12)], "13.3", "53.8"),
    ]
    for fid, needle, pairs, w, r in hist:
        ln = find_line(W16, needle, after="## Historical")
        ln_old = find_line(W16, {"sw1-to-sw2+sw3": "| SW1→SW2(root40) + SW3(root e0) |", "sw1-to-sw2+sw4": "| SW1→SW2(root40) + SW4(root e0) |"}[fid], commit=old)
        for mode, val in (("write", w), ("read", r)):
            F.append(torch_fig(f"old-3root-{fid}-{mode}", f"COLLAPSE trigger on the old stack: {needle.strip('| ').replace('`', '')}, {mode.upper()} as labelled",
                               src_at(W16, ln, sec, f"original {'WRITE' if mode == 'write' else 'READ'}") + "; also "
                               + src_at(W16, ln_old, "Posted-Write Collapse on c-payne › Test Results", f"{'Write' if mode == 'write' else 'Read'} BW", commit=old),
                               pairs, mode, float(val), "256 MB", 50, topology=T_OLD,
                               assumed_pairs=f"pairs as {EXA} replays this row"))
    for fid, needle, w, r in (("sw1-to-sw3+sw2-variant", "| SW1 → SW3 + SW2 (variant src) |", "12.5", "57.0"),
                              ("sw1-to-sw2+sw4-variant", "| SW1 → SW2 + SW4 (variant src) |", "12.8", "53.6")):
        ln = find_line(W16, needle, after="## Historical")
        for mode, val in (("write", w), ("read", r)):
            F.append({
                "id": f"old-3root-{fid}-{mode}", "what": f"COLLAPSE trigger on the old stack: {needle.strip('| ')}, {mode.upper()} as labelled",
                "source": src_at(W16, ln, sec, f"original {'WRITE' if mode == 'write' else 'READ'}"),
                "topology": T_OLD, "tool": "torch copy_ (256 MB, 50 iterations)", "engine": "copy", "op": "write",
                "pattern": {"kind": "one-to-many", "source": "sw1", "gpus": []}, "bytes": "256 MiB", "value": float(val),
                "metric": "aggregate-gbps", "fit": False,
                "note": "which source GPUs ('variant src') is not stated" + ("" if mode == "write" else "; labelled READ (see torch harness note: executed as writes in the reverse direction)"),
            })
    for fid, needle, pairs, w, r in (("sw1-to-sw2+sw3", "| SW1 → SW2 + SW3 |", [(0, 4), (1, 8)], "53.5", "56.4"),
                                     ("sw1-to-sw2+sw4", "| SW1 → SW2 + SW4 |", [(0, 4), (1, 12)], "56.2", "56.4"),
                                     ("sw1-to-sw2-control", "| SW1 → SW2 only (1 dst root, control) |", [(0, 4), (1, 5)], "56.4", "56.4"),
                                     ("sw1-sw2-and-sw3-sw4", "| SW1 → SW2 + SW3→SW4 (different src, control) |", [(0, 4), (8, 12)], "112.5", "112.5")):
        ln = find_line(W16, needle, after="**On the current platform stack")
        for mode, val in (("write", w), ("read", r)):
            F.append(torch_fig(f"3root-now-{fid}-{mode}", f"historical trigger pattern re-run on the current stack: {needle.strip('| ')}, {mode.upper()} as labelled",
                               src_at(W16, ln, sec + " › current stack", f"current {'WRITE' if mode == 'write' else 'READ'}"),
                               pairs, mode, float(val), "256 MB", 50, topology=TOPO,
                               assumed_pairs=f"pairs as {EXA} replays this row"))
    # ---- old page (bab3196): the old-stack controls and the rest of its tables
    secO = "Posted-Write Collapse on c-payne › Test Results (old stack)"
    for fid, needle, pairs, w, r in (
        ("sw1-to-sw3+sw4", "| SW1→SW3+SW4 (same dst root e0) |", [(0, 8), (1, 12)], "53.4", "57.5"),
        ("sw2-to-sw3+sw4", "| SW2→SW3+SW4 (same dst root e0) |", [(4, 8), (5, 12)], "55.3", "54.1"),
        ("sw1-to-sw2-only", "| SW1→SW2 only (1 dst root) |", [(0, 4), (1, 5)], "54.1", "54.7"),
        ("sw1-to-sw3-only", "| SW1→SW3 only (1 dst root) |", [(0, 8), (1, 9)], "56.0", "53.0"),
        ("sw1-sw2-and-sw3-sw4", "| SW1→SW2 + SW3→SW4 (diff src sw) |", [(0, 4), (8, 12)], "106.8", "105.6"),
    ):
        ln = find_line(W16, needle, commit=old)
        for mode, val in (("write", w), ("read", r)):
            F.append(torch_fig(f"old-3root-{fid}-{mode}", f"control on the old stack: {needle.strip('| ')}, {mode.upper()} as labelled",
                               src_at(W16, ln, secO, f"{'Write' if mode == 'write' else 'Read'} BW column", commit=old),
                               pairs, mode, float(val), "256 MB", 50, topology=T_OLD,
                               assumed_pairs=f"pairs as {EXA} replays this row (its comments quote these numbers as ORIG)",
                               note="control: no collapse"))
    # tier table and per-GPU ranges (old stack)
    for tier, needle, avg, lo, hi, n in (("pix", "| **PIX** (same switch) |", "53.2", "52.1", "54.2", 16),
                                         ("phb", "| **PHB** (same root cplx, diff switch) |", "53.1", "52.5", "53.8", 8),
                                         ("node", "| **NODE** (cross root complex) |", "52.8", "52.2", "53.6", 16)):
        ln = find_line(W16, needle, commit=old)
        for stat, v in (("mean", avg), ("min", lo), ("max", hi)):
            F.append({
                "id": f"old-3root-tier-{tier}-{stat}", "what": f"single-flow {tier.upper()} tier bandwidth, {stat} over {n} unnamed samples (old stack)",
                "source": src_at(W16, ln, "P2P Bandwidth Results › Bandwidth by Tier (old stack)", "Avg BW" if stat == "mean" else "Min–Max", commit=old),
                "topology": T_OLD, "tool": "CUDA cudaMemcpy P2P write (as stated)", "engine": "copy", "op": "write",
                "pattern": {"kind": "unstated", "gpus": []}, "value": float(v), "metric": "per-stream-gbps", "fit": False,
                "note": "summary over unnamed pairs/samples",
            })
    for fid, needle, pair, lo, hi in (("pix-0-1", "PIX  (GPU0↔GPU1 same switch 1):", (0, 1), "52.5", "54.2"),
                                      ("phb-8-12", "PHB  (GPU8↔GPU12 same root e0):", (8, 12), "53.1", "53.8"),
                                      ("node-0-4", "NODE (GPU0↔GPU4 root 00→40):", (0, 4), "52.5", "53.6"),
                                      ("node-0-8", "NODE (GPU0↔GPU8 root 00→e0):", (0, 8), "52.2", "54.1"),
                                      ("node-0-12", "NODE (GPU0↔GPU12 root 00→e0 sw4):", (0, 12), "52.4", "53.3")):
        ln = find_line(W16, needle, commit=old)
        for stat, v in (("min", lo), ("max", hi)):
            F.append({
                "id": f"old-3root-pair-{fid}-{stat}", "what": f"single flow GPU{pair[0]}↔GPU{pair[1]} ({fid.split('-')[0].upper()}), {stat} of repeated samples/directions (old stack)",
                "source": src_at(W16, ln, "P2P Bandwidth Results › Per-GPU Bandwidth (old stack)", "range", commit=old),
                "topology": T_OLD, "tool": "CUDA cudaMemcpy P2P write (as stated)", "engine": "copy", "op": "write",
                "pattern": one_at_a_time([pair, pair[::-1]], stat), "value": float(v), "metric": "per-stream-gbps", "fit": False,
                "note": "range over repeats/directions, not one measurement",
            })
    # p2pmark latency, 4 GPUs of SW1 (old stack)
    secL = "P2P Latency Results › 4 GPU (Same Switch — SW1) (old stack)"
    rows = matrix_cells(W16, "### 4 GPU (Same Switch — SW1)", [f"GPU{i}:" for i in range(4)], commit=old)
    for i in range(4):
        ln, cells = rows[f"GPU{i}:"]
        for j in range(4):
            if i == j:
                continue
            F.append({
                "id": f"old-3root-lat-{i}-{j}", "what": f"p2pmark latency: GPU{i} reads GPU{j} (same switch SW1), alone (old stack)",
                "source": src_at(W16, ln, secL, f"row GPU{i} column GPU{j}", commit=old),
                "topology": T_OLD, "tool": "p2pmark --latency (128-byte remote reads, 10000 iterations; version not stated)",
                "engine": "sm", "op": "read", "streams": [[g(i), g(j)]], "bytes": "128 B", "value": float(cells[j]),
                "metric": "round-trip-latency-us", "fit": True,
                "note": "single-thread kernel on the reader, 32 sequential 4-byte ld.global.cv loads per pass; 'Src->' header: row = reader (as in p2pmark 3c39f36)",
            })
    F.append({
        "id": "old-3root-lat-4gpu-min", "what": "p2pmark min latency, 4 GPUs of SW1 (old stack)",
        "source": cite(W16, "- Min latency: **0.77 µs**", secL, "", "0.77", commit=old),
        "topology": T_OLD, "tool": "p2pmark --latency", "engine": "sm", "op": "read",
        "pattern": one_at_a_time([(a, b) for a in range(4) for b in range(4) if a != b], "min"), "bytes": "128 B",
        "value": 0.77, "metric": "round-trip-latency-us", "fit": False, "note": "the minimum of the matrix above (derived)",
    })
    F.append({
        "id": "old-3root-lat-4gpu-effective", "what": "p2pmark effective latency under load, 4 GPUs of SW1 all reading all peers (old stack)",
        "source": cite(W16, "- Effective under concurrent load: **1.98 µs**", secL, "", "1.98", commit=old),
        "topology": T_OLD, "tool": "p2pmark --latency", "engine": "sm", "op": "read",
        "pattern": {"kind": "all-to-all", "gpus": [g(i) for i in range(4)]}, "bytes": "128 B",
        "value": 1.98, "metric": "round-trip-latency-us", "fit": True,
        "note": "max over GPUs of per-load time with every GPU running one reader kernel per peer",
    })
    # 8-GPU latency ranges + effective (HEAD says 3-root current; the numbers are the old page's)
    secH = "Latency"
    for fid, needle, pairs, lo, hi, tier in (
        ("pix", "| PIX (same switch) | 0.72–0.80 µs |", [(a, b) for s in (1, 2) for a in SW[s] for b in SW[s] if a != b], "0.72", "0.80", "same switch"),
        ("node", "| NODE (cross-root) | 1.40–1.63 µs |", [(a, b) for a in SW[1] for b in SW[2]] + [(b, a) for a in SW[1] for b in SW[2]], "1.40", "1.63", "across root complexes"),
    ):
        ln = find_line(W16, needle, after="## Latency")
        for stat, v in (("min", lo), ("max", hi)):
            F.append({
                "id": f"lat-8gpu-{fid}-{stat}", "what": f"p2pmark latency {tier}, {stat} over pairs of an 8-GPU subset, each alone",
                "source": src_at(W16, ln, secH, "Latency column") + "; also " + cite(W16, "PIX (same switch):  0.72–0.80 µs" if fid == "pix" else "NODE (cross-root):  1.40–1.63 µs", "P2P Latency Results › 8 GPU (SW1 + SW2)", "", None, commit=old),
                "topology": T_OLD, "tool": "p2pmark --latency (128-byte remote reads, 10000 iterations)", "engine": "sm", "op": "read",
                "pattern": one_at_a_time(pairs, stat), "bytes": "128 B", "value": float(v), "metric": "round-trip-latency-us", "fit": False,
                "note": ("range over pairs; the current page places it on the 3-root cabling, but the identical numbers are on the first version "
                         "of the page (old stack, SW1+SW2 subset), so the old-stack topology is used"),
            })
    ln = find_line(W16, "| PHB (same root, diff switch — SW3↔SW4) | ~1.40 µs |", after="## Latency")
    F.append({
        "id": "lat-8gpu-phb-approx", "what": "p2pmark latency SW3↔SW4 (same root complex e0, different switch), approximate",
        "source": src_at(W16, ln, secH, "Latency column"), "topology": T_OLD,
        "tool": "p2pmark --latency (128-byte remote reads, 10000 iterations)", "engine": "sm", "op": "read",
        "pattern": one_at_a_time([(a, b) for a in SW[3] for b in SW[4]] + [(b, a) for a in SW[3] for b in SW[4]], "approximate"),
        "bytes": "128 B", "value": 1.40, "metric": "round-trip-latency-us", "fit": False, "note": "approximate (~1.40) over unnamed pairs",
    })
    ln = find_line(W16, "Effective latency under full concurrent load (56 streams 8-GPU): **7.43 µs**")
    F.append({
        "id": "lat-8gpu-effective", "what": "p2pmark effective latency, 8 GPUs (SW1+SW2) all reading all peers",
        "source": src_at(W16, ln, secH, "") + "; also " + cite(W16, "- Under full concurrent load (56 streams): **7.43 µs**", "P2P Latency Results › 8 GPU (SW1 + SW2)", "", "7.43", commit=old),
        "topology": T_OLD, "tool": "p2pmark --latency", "engine": "sm", "op": "read",
        "pattern": {"kind": "all-to-all", "gpus": [g(i) for i in range(8)]}, "bytes": "128 B", "value": 7.43,
        "metric": "round-trip-latency-us", "fit": True,
        "note": "subset SW1+SW2 per the first version of the page (old stack); max over GPUs of per-load time",
    })
    ln = find_line(W16, "- Min latency: **0.72 µs**", commit=old)
    F.append({
        "id": "old-lat-8gpu-min", "what": "p2pmark min latency, 8 GPUs SW1+SW2 (old stack)",
        "source": src_at(W16, ln, "P2P Latency Results › 8 GPU (SW1 + SW2) (old stack)", "", commit=old), "topology": T_OLD,
        "tool": "p2pmark --latency", "engine": "sm", "op": "read",
        "pattern": one_at_a_time([(a, b) for a in range(8) for b in range(8) if a != b], "min"), "bytes": "128 B", "value": 0.72,
        "metric": "round-trip-latency-us", "fit": False, "note": "min over pairs (= the PIX minimum)",
    })
    # p2pmark scores on 8-GPU subsets
    for sub, needle, gl, link, avg, dense, meas, ideal in (
        ("sw1+sw2", "| SW1 + SW2 (NODE) |", list(range(8)), "0.86", "54.17", "0.38", "162.82", "433.39"),
        ("sw3+sw4", "| SW3 + SW4 (PHB on 3-root) |", list(range(8, 16)), "0.86", "54.28", "0.38", "165.92", "434.28"),
    ):
        ln = find_line(W16, needle, after="p2pmark scores on 8-GPU subsets")
        src = src_at(W16, ln, "Latency › p2pmark scores on 8-GPU subsets", "")
        gg = [g(i) for i in gl]
        base = {"topology": T_OLD, "tool": "p2pmark (version not stated)", "engine": "copy", "op": "read"}
        F.append(dict(base, id=f"p2pmark-{sub}-link-score", what=f"p2pmark PCIe link score, {sub}", source=src + ", PCIe Link Score",
                      pattern={"kind": "many-to-one", "sink": "each", "gpus": gg}, value=float(link), metric="score", fit=False,
                      note="score; numbers identical on the first (old-stack) version of the page"))
        F.append(dict(base, id=f"p2pmark-{sub}-link-avg", what=f"p2pmark mean single-reader bandwidth, {sub}", source=src + ", PCIe Link Score (GB/s avg)",
                      pattern={"kind": "many-to-one", "sink": "each", "gpus": gg}, bytes="64 MiB", value=float(avg), metric="aggregate-gbps", fit=False,
                      note="mean over readers of separate runs (derived)"))
        F.append(dict(base, id=f"p2pmark-{sub}-dense-score", what=f"p2pmark dense interconnect score, {sub}", source=src + ", Interconnect Score",
                      pattern={"kind": "all-to-all", "gpus": gg}, value=float(dense), metric="score", fit=False, note="score"))
        F.append(dict(base, id=f"p2pmark-{sub}-all-read-all", what=f"p2pmark: all 8 GPUs of {sub} read all peers at once", source=src + ", Interconnect Score (measured)",
                      pattern={"kind": "all-to-all", "gpus": gg}, bytes="64 MiB", value=float(meas), metric="aggregate-gbps", fit=True,
                      note=("sum of per-GPU rates, each GPU pulling from 7 peers on 7 streams (p2pmark Test 3); version not stated; "
                            "identical numbers on the first (old-stack) version of the page, hence the old-stack topology")))
        F.append(dict(base, id=f"p2pmark-{sub}-ideal", what=f"p2pmark ideal (sum of single-reader runs), {sub}", source=src + ", Interconnect Score (ideal)",
                      pattern={"kind": "many-to-one", "sink": "each", "gpus": gg}, bytes="64 MiB", value=float(ideal), metric="aggregate-gbps", fit=False,
                      note="sum of 8 separate runs (derived)"))
    # old page: probe, multi-flow, DS port, uplink degradation
    probe = {1: "50.18", 2: "38.00", 3: "25.71", 4: "12.59", 5: "25.66", 6: "37.87", 7: "50.03"}
    for k, v in probe.items():
        ln = find_line(W16, f"+{k}: {v} GB/s avg", commit=old)
        F.append({
            "id": f"old-probe-sw1+sw2-plus{k}", "what": f"p2pmark staggered probe, distance +{k}, 8 GPUs SW1+SW2 (old stack)",
            "source": src_at(W16, ln, "p2pmark Benchmark Results › 8-GPU Topology Probe (old stack)", f"+{k}", commit=old),
            "topology": T_OLD, "tool": "p2pmark (version not stated)", "engine": "copy", "op": "read",
            "pattern": {"kind": "stagger", "distance": k, "gpus": [g(i) for i in range(8)]}, "bytes": "64 MiB", "value": float(v),
            "metric": "mean-per-stream-gbps", "fit": False,
            "note": ("version not stated, so read (lukealonso 3c39f36) or write (voipmonitor fork) is unknown; "
                     "collapse-report.md's write probe on the same pair of switches gives the same numbers"),
        })
    for fid, needle, v in (("1-pix", "| 1 | PIX (same switch) | 52.5 GB/s |", "52.5"), ("2-pix", "| 2 | PIX (same switch) | 105.7 GB/s |", "105.7"),
                           ("1-node", "| 1 | NODE (cross root cplx) | 52.5 GB/s |", "52.5"),
                           ("2-node-same-dst", "| 2 | NODE (same src sw → same dst sw) |", "53.2"),
                           ("2-node-same-src", "| 2 | NODE (same src sw) |", "53.1"), ("4-node-1to1", "| 4 | NODE 1:1 SW1→SW2 |", "53.7"),
                           ("4-node-3dst", "| 4 | NODE, dst across 3 switches |", "19.2"), ("4-phb-1to1", "| 4 | PHB 1:1 SW3→SW4 (same root e0) |", "54.4"),
                           ("16-sw1-sw2", "| 16 | SW1→SW2 all pairs |", "51.9")):
        ln = find_line(W16, needle, commit=old)
        F.append({
            "id": f"old-multiflow-{fid}", "what": f"multi-flow scaling (old stack): {needle.strip('| ')}",
            "source": src_at(W16, ln, "Multi-Flow Scaling (old stack)", "Total BW", commit=old), "topology": T_OLD,
            "tool": "not stated", "engine": "copy", "op": "write", "pattern": {"kind": "unstated", "gpus": []}, "value": float(v),
            "metric": "aggregate-gbps", "fit": False, "note": "pairs not stated" + ("; collapse pattern" if fid == "4-node-3dst" else ""),
        })
    ln = find_line(W16, "| Same GPU: GPU0→GPU4 + GPU0→GPU2 | 52.5 GB/s |", commit=old)
    F.append(torch_fig("old-ds-port-same-gpu", "2 flows from GPU0: GPU0→GPU4 + GPU0→GPU2 (old stack)",
                       src_at(W16, ln, "Multi-Flow Scaling › GPU DS Port Isolation (old stack)", "Total BW", commit=old),
                       [(0, 4), (0, 2)], "write", 52.5, "tool not stated; the repo's harness assumed", 50, topology=T_OLD))
    ln = find_line(W16, "| Diff GPU: GPU0→GPU4 + GPU1→GPU2 | ~105 GB/s |", commit=old)
    F.append({"id": "old-ds-port-diff-gpu", "what": "2 flows from different GPUs: GPU0→GPU4 + GPU1→GPU2 (old stack)",
              "source": src_at(W16, ln, "Multi-Flow Scaling › GPU DS Port Isolation (old stack)", "Total BW", commit=old), "topology": T_OLD,
              "tool": "not stated", "engine": "copy", "op": "write", "streams": pairs_streams([(0, 4), (1, 2)]), "value": 105.0,
              "metric": "aggregate-gbps", "fit": False, "note": "approximate (~105)"})
    for fid, needle, g5, g2, pair in (("pix", "| PIX GPU0→1 (same switch SW1) |", "52.7", "52.4", (0, 1)),
                                      ("node", "| NODE GPU0→4 (cross root 00→40) |", "52.4", "7.0", (0, 4))):
        ln = find_line(W16, needle, commit=old)
        for st, v in (("gen5", g5), ("gen2-uplink", g2)):
            F.append({
                "id": f"old-uplink-degrade-{fid}-{st}", "what": f"single flow GPU{pair[0]}→GPU{pair[1]}, SW1 uplink (00:01.1) at {'Gen5' if st == 'gen5' else 'Gen2'} (old stack)",
                "source": src_at(W16, ln, "Uplink Degradation Proof (old stack)", "Baseline (Gen5)" if st == "gen5" else "Gen2 uplink", commit=old),
                "topology": T_OLD, "tool": "not stated", "engine": "copy", "op": "write", "streams": [[g(pair[0]), g(pair[1])]],
                "value": float(v), "metric": "per-stream-gbps", "fit": st == "gen5",
                "note": "single flow, tool not stated" if st == "gen5" else "needs a topology with SW1's uplink at Gen2",
            })
    # ---- collapse-report (4-root per the report)
    secC = "Reproduction — Method 1: Direct Python (PyTorch) › Observed output"
    for fid, needle, pairs, w, r, note in (
        ("baseline", "BASELINE   1 pair  SW1->SW2 [1 dst root]                          52.5", [(0, 4)], "52.5", "53.4", ""),
        ("control", "CONTROL    SW1->SW2 only, 2 GPUs [1 dst root]                     52.1", [(0, 4), (1, 5)], "52.1", "53.4", "control: one destination root"),
        ("collapse-2", "COLLAPSE-2 SW1 -> SW2 + SW3 [2 dst roots]                         13.5", [(0, 4), (1, 8)], "13.5", "53.2", ""),
        ("collapse-3", "COLLAPSE-3 SW1 -> SW2 + SW3 + SW4 [3 dst roots]                   12.6", [(0, 4), (1, 8), (2, 12)], "12.6", "54.3", ""),
        ("healthy-indep", "HEALTHY    indep src: SW1->SW2 + SW2->SW3 + SW3->SW4 + SW4->SW1  197.8", [(0, 4), (4, 8), (8, 12), (12, 0)], "197.8", "200", "control: four source switches"),
    ):
        ln = find_line(CR, needle)
        for mode, val in (("write", w), ("read", r)):
            f = torch_fig(f"cr-4root-{fid}-{mode}", f"collapse-report.md test {fid}, {mode.upper()} as labelled (4-root cabling per the report)",
                          src_at(CR, ln, secC, "WRITE column" if mode == "write" else "READ column"),
                          pairs, mode, float(val), "collapse_repro.py, 256 MB", 15, topology=T_4RC,
                          note=(note + ("; approximate (~200)" if val == "200" else "")).strip("; "),
                          fit=(False if val == "200" else None))
            F.append(f)
    probe = {1: ("50.13", "401.07"), 2: ("38.15", "305.23"), 3: ("25.67", "205.33"), 4: ("12.75", "102.00"),
             5: ("25.57", "204.58"), 6: ("37.96", "303.67"), 7: ("50.04", "400.28")}
    for k, (avg, tot) in probe.items():
        ln = find_line(CR, f"{avg} avg   {tot} total")
        F.append({
            "id": f"cr-probe-plus{k}", "what": f"p2pmark staggered writes, distance +{k}: GPU i → GPU (i+{k}) mod 8, all 8 at once (SW1+SW2)",
            "source": src_at(CR, ln, "Reproduction — Method 2: p2pmark › Topology probe: staggered writes by peer distance", f"+{k} avg"),
            "topology": T_4RC, "tool": "p2pmark (voipmonitor/p2pmark fork, commit not stated)", "engine": "copy", "op": "write",
            "streams": [[g(i), g((i + k) % 8)] for i in range(8)], "bytes": "64 MiB", "value": float(avg),
            "metric": "mean-per-stream-gbps", "fit": True,
            "note": (f"total {tot} = 8 × avg; the fork's exact issue/timing is not published (upstream p2pmark times each GPU with events); "
                     + ("the report calls +4 a collapse, but all 8 streams go between one pair of switches (one destination root per "
                        "source switch): 12.75 × 4 ≈ 51 is the shared uplink, not the collapse trigger" if k == 4 else "")),
        })
    F.append({
        "id": "cr-p2pmark-all-to-all", "what": "p2pmark all-to-all stress, 8 GPUs (SW1+SW2)",
        "source": cite(CR, "**all-to-all stress test**", "Reproduction — Method 2: p2pmark", "", "159"),
        "topology": T_4RC, "tool": "p2pmark (voipmonitor/p2pmark fork)", "engine": "copy", "op": "write",
        "pattern": {"kind": "all-to-all", "gpus": [g(i) for i in range(8)]}, "bytes": "64 MiB", "value": 159.0,
        "metric": "aggregate-gbps", "fit": False,
        "note": "read or write in the fork not stated; the report's reading (collapse on every cross-switch flow) conflicts with the 2-switch argument of the root-topology comparison",
    })
    # cross-group GPU-resident latency (root-topology comparison, 3-root current stack)
    for (a, b), v in (((0, 8), "1083"), ((0, 12), "1039"), ((4, 8), "1116")):
        ln = find_line(RTC, f"| GPU {a} ↔ GPU {b}")
        F.append({
            "id": f"pingpong-{a}-{b}", "what": f"GPU-resident ping-pong GPU{a}↔GPU{b} (different quadrants), one way",
            "source": src_at(RTC, ln, "Results › 2b › Cross-group reference points", "One-way"), "topology": TOPO,
            "tool": "gpu_latency.cu (GPU-resident ping-pong)", "engine": "sm", "op": "ping-pong",
            "streams": [[g(a), g(b)], [g(b), g(a)]], "bytes": "4 B", "value": float(v), "metric": "one-way-latency-ns", "fit": True,
            "note": "one thread per GPU stores the round number into the peer's flag and spins on its own; (elapsed / 2 rounds); 1,000,000 rounds",
        })
    return F


def judgement():
    return []


def topologies():
    src = (f"{RTX6KPRO}@{SHORT} {W16} (cablings, single-pair, multi-pair, latency, hardware notes); {CR} (system under test, 4-root collapse); "
           f"{RTC} § 2b (inter-quadrant latency); {MS} § MaxReadReq (MPS on this board); "
           "NVIDIA RTX PRO 6000 Blackwell datasheet (188 SMs, 1792 GB/s, PCIe Gen5 x16)")
    model = "(Workstation/Server Edition mix)"
    mixnote = (f"; GPU editions: 'mix of Workstation + Server' per {W16}, all Workstation per {CR} (sources disagree; which GPU is which is not stated)")
    com = ("16 GPUs on four c-payne PM50100 Gen5 switches (4 GPUs each, one Gen5 x16 uplink each) under one TR PRO 7955WX\n"
           "(one I/O die, four quadrants). P2P within a switch stays in the switch; across switches it goes\n"
           "uplink -> root port -> (I/O die) -> root port -> uplink. Latencies and P2P caps are left to be fitted from\n"
           "calibration/public/wrx90-pm50100-16gpu/figures.toml.\n")
    out = []
    col_old = {"min_sources": 2, "min_targets": 2, "rate_gbps": 12.5, "per": "port",
               "note": (f"old stack only ({W16} § Historical: Posted-Write Collapse, first version of the page {SHORT_OLD}): "
                        "2 GPUs of SW1 writing through root port 00:01.1 to GPUs behind root complexes 40 and e0 got 11.6-13.3 GB/s together "
                        "(rate = the 12.5 GB/s row; fit from the figures); one destination root (SW1->SW3+SW4 both on e0: 53.4) or two source switches "
                        "(106.8) do not collapse; reads (as labelled) unaffected. Put on the root complex (the report's hypothesis A: I/O-die "
                        "arbitration); only SW1's root port was tested as a source; window_ns not measured")}
    col_4r = {"min_sources": 2, "min_targets": 2, "rate_gbps": 13.5, "per": "port",
              "note": (f"as {CR} reports it for this cabling on BIOS 12.09 / 6.18.24 / 595.58.03: 2 GPUs of SW1 to 2 destination roots 13.5 GB/s "
                       "together, 3 GPUs to 3 roots 12.6; one destination root (52.1) and four independent source switches (197.8) healthy. "
                       f"{W16} (4-root variant, same stack family) finds no collapse on the same patterns: the sources disagree")}
    specs = [
        (TOPO, "3root", "3-root cabling (SW1->Q0, SW2->Q2, SW3+SW4->Q3), current stack, no collapse", STACK_CURRENT, None,
         f"3-root cabling: SW1 -> 00:01.1 (Q0), SW2 -> 40:01.1 (Q2), SW3 -> e0:01.1 and SW4 -> e0:03.1 (both Q3).\n"
         f"Platform: the current stack, on which {W16} finds no catastrophic collapse (see -collapse.toml for the old stack).\n"),
        (T_OLD, "3root", "3-root cabling, old stack (kernel 6.17 / driver 595.45.04), posted-write collapse", STACK_OLD, col_old,
         "3-root cabling on the old stack, where 2 GPUs of one switch writing to 2 destination root complexes collapsed.\n"),
        (T_2R, "2root", "2-root cabling (SW1+SW2->Q0, SW3+SW4->Q3), no collapse",
         "stack of this rewiring session not stated (the page's current stack is " + STACK_CURRENT + ")", None,
         "2-root cabling: SW1 and SW2 on two root ports of root bus 00 (Q0), SW3 and SW4 on two of e0 (Q3).\n"),
        (T_4R, "4root", "4-root cabling (SW1..SW4 -> Q0..Q3), no collapse per the 16-GPU page",
         "stack of this rewiring session not stated (the page's current stack is " + STACK_CURRENT + ")", None,
         f"4-root cabling: each switch on its own quadrant. {W16} finds no collapse here; {CR} reports one (see -4root-collapse.toml).\n"),
        (T_4RC, "4root", "4-root cabling as collapse-report.md describes it, with its collapse",
         "as collapse-report.md § System Under Test states: ASRock WRX90 WS EVO BIOS 12.09 (2026-02-04), Linux 6.18.24-061824-generic, "
         "NVIDIA 595.58.03 (CUDA 13.2), amd_iommu=off iommu=off, ACS Request-Redirect cleared", col_4r,
         f"4-root cabling as {CR} describes it (SW4 on e0:03.1), with the collapse it reports on BIOS 12.09 / 6.18.24 / 595.58.03.\n"),
    ]
    for path, cab, title, plat, col, c2 in specs:
        t = four_switch(f"WRX90 WS EVO + TR PRO 7955WX, 4x c-payne PM50100, 16x RTX PRO 6000: {title}", CABLING[cab], plat, src, com + c2,
                        model, collapse=col, extra_note=mixnote)
        out.append((path, t))
    return out


SHORT_OLD = "bab3196"
