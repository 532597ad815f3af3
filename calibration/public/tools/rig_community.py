"""R6 (pcie-bandwidth.md and topology.md): numbers quoted for several
community boxes whose PCIe trees are not published. No topology; nothing is
fitted; each figure names its box."""

from common import *

RIG = "pcie-bandwidth-community"
TOPO = None
PB = "hardware/pcie-bandwidth.md"
TP = "hardware/topology.md"
MS = "hardware/wrx90-cpayne-microchip-switches.md"
FLAT = "hardware/wrx90-cpayne-2switch-flat.md"
GPUS = [g(i) for i in range(8)]

BOX = {
    "purplepow3r": "purplepow3r: dual Turin, 4x RTX PRO 6000 WS + 2x RTX 5090 (which device is which not stated)",
    "orangezed": "orangezed: dual EPYC 9374F (Genoa), 8x RTX PRO 6000 Max-Q, 10x48 GB DDR5-4800 (5 channels/CPU), 2 xGMI links",
    "Festr": "Festr: dual Turin, 8x RTX PRO 6000 Server, direct-attach, 24x96 GB DDR5-6400 (12 channels/CPU), 3 xGMI links",
    "luke": "luke: 3x Microchip switches, single CPU, 8x RTX PRO 6000 Max-Q (tree not published)",
    "Grimulkan": "Grimulkan: 4x switches, single CPU (tree not published)",
    "voipmonitor": "voipmonitor: ASUS ESC8000A-E13P (see calibration/public/asus-esc8000a-e13p)",
    "turin-direct": "'Turin direct-attach' (unnamed box in the WRX90 pages' comparison tables; presumably Festr's)",
    "broadcom": "Broadcom PEX890xx box (ASUS ESC8000A-E13P per the text)",
}
NOFIT = "box's PCIe tree not published (no topology file)"


def F_(fid, what, source, box, tool, engine, op, value, metric, note="", pattern=None, streams=None, nbytes=None):
    f = {"id": fid, "what": what, "source": source, "tool": tool, "engine": engine, "op": op}
    if streams is not None:
        f["streams"] = streams
    else:
        f["pattern"] = pattern or {"kind": "unstated", "gpus": []}
    if nbytes:
        f["bytes"] = nbytes
    f.update(value=value, metric=metric, fit=False, box=BOX[box], note=(NOFIT + ("; " + note if note else "")))
    return f


def figures():
    F = []
    sec = "P2P Bandwidth Measurements › Unidirectional P2P Bandwidth"
    for box, needle, same, cross in (("purplepow3r", "| purplepow3r | Dual Turin, 4x 6000 Pro WS + 2x 5090 |", "~55-56", "~51"),
                                     ("orangezed", "| orangezed | Dual EPYC 9374F, 8x 6000 Pro MaxQ |", "~54", "~39"),
                                     ("Festr", "| Festr | Dual Turin, 8x 6000 Pro Server |", "~53", None),
                                     ("luke", "| luke | Switches, 8x 6000 Pro MaxQ |", "~54", None),
                                     ("voipmonitor", "| voipmonitor | [ASUS ESC8000A-E13P", "~54", "~50")):
        for kind, v in (("same-numa", same), ("cross-numa", cross)):
            if v is None:
                continue
            vals = v.strip("~").split("-")
            for k, x in enumerate(vals):
                tag = "" if len(vals) == 1 else ("-min" if k == 0 else "-max")
                F.append(F_(f"{box}-uni-{kind}{tag}", f"{box}: unidirectional P2P write, {kind.replace('-', ' ')} ({'range ' + v if tag else v})",
                            cite(PB, needle, sec, "Same-NUMA" if kind == "same-numa" else "Cross-NUMA", v), box,
                            "p2pBandwidthLatencyTest or p2pmark (page: 'All measurements taken using ...')", "copy", "write", float(x), "per-stream-gbps",
                            note=("approximate; the ASUS page's own matrix gives 35.9–40.2 across chips/NUMA, not ~50" if box == "voipmonitor" and kind == "cross-numa"
                                  else "approximate")))
    sec = "P2P Bandwidth Measurements › Bidirectional P2P Bandwidth"
    for box, needle, same, cross in (("purplepow3r", "| purplepow3r | Dual Turin | ~111 GB/s |", "~111", "~99"),
                                     ("orangezed", "| orangezed | Dual EPYC 9374F | ~103 GB/s |", "~103", "~64"),
                                     ("voipmonitor", "| voipmonitor | [ASUS ESC8000A-E13P + Broadcom switches]", "~103", "~95")):
        for kind, v in (("same-numa", same), ("cross-numa", cross)):
            F.append(F_(f"{box}-bidi-{kind}", f"{box}: bidirectional P2P, {kind.replace('-', ' ')} ({v})",
                        cite(PB, needle, sec, "Same-NUMA" if kind == "same-numa" else "Cross-NUMA", v), box,
                        "p2pBandwidthLatencyTest (presumed)", "copy", "bidirectional", float(v.strip("~")), "aggregate-gbps", note="approximate"))
    rel = lambda i, j: "devices 0-2 vs 3-5 per the page's note; the matrix shows only device 3 as slow"
    for kind, after, prefix in (("uni", "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)", "purplepow3r-uni"),
                                ("bidi", "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "purplepow3r-bidi"),
                                ("lat", "P2P=Enabled Latency (P2P Writes) Matrix (us)", "purplepow3r-lat")):
        for f in p2pblt_matrix(PB, after, [str(i) for i in range(6)], kind, lambda i, j: "purplepow3r box", prefix,
                               section=f"purplepow3r's system › {after}", fit=False,
                               extra_note=("the page says devices 0-2 are NUMA0 and 3-5 NUMA1, but only device 3 is slow in the matrix; "
                                           "which devices are the two RTX 5090s is not stated")):
            f["box"] = BOX["purplepow3r"]
            f["note"] = NOFIT + "; " + f["note"]
            F.append(f)
    for f in p2pblt_matrix(PB, "From luke's 8x RTX 6000 Pro on switches:", ["0", "1"], "lat", lambda i, j: "luke's box", "luke-lat",
                           section="P2P Latency Measurements › luke's 8x RTX 6000 Pro on switches", fit=False,
                           extra_note="only rows 0 and 1 are printed"):
        f["box"] = BOX["luke"]
        f["note"] = NOFIT + "; " + f["note"]
        F.append(f)
    sec = "P2P Latency Measurements › P2P Enabled vs Disabled"
    for fid, needle, vals, what, box in (("same-numa", "| P2P Enabled (same NUMA) | 0.36-0.45 us |", ("0.36", "0.45"), "P2P enabled, same NUMA", "purplepow3r"),
                                         ("cross-numa-turin", "| P2P Enabled (cross-NUMA, Turin) | 0.44 us |", ("0.44",), "P2P enabled, cross-NUMA, Turin", "purplepow3r")):
        for k, v in enumerate(vals):
            tag = "" if len(vals) == 1 else ("-min" if k == 0 else "-max")
            F.append(F_(f"p2pblt-lat-{fid}{tag}", f"p2pBandwidthLatencyTest P2P write latency, {what}", cite(PB, needle, sec, "Cross-GPU Latency", v), box,
                        "p2pBandwidthLatencyTest", "copy", "write", float(v), "copy-latency-us", nbytes="16 B",
                        note="box not named; the values match purplepow3r's matrix below it"))
    F.append(F_("p2pblt-lat-p2p-disabled", "latency with P2P disabled (staged through host)", cite(PB, "| P2P Disabled | ~14 us |", sec, "Cross-GPU Latency", "~14"),
                "purplepow3r", "p2pBandwidthLatencyTest", "copy", "write", 14.0, "copy-latency-us", nbytes="16 B",
                note="approximate; box not named; P2P disabled = a different path (host staging)"))
    sec8, sec4 = "P2P Bandwidth Measurements › p2pmark Scores (8 GPUs)", "P2P Bandwidth Measurements › p2pmark Scores (4 GPUs)"
    for n, box, needle, link, avg, dense, meas, ideal, lat in (
        (8, "luke", "| luke (3x switches, single CPU) | 0.86 (54.3 GB/s) |", "0.86", "54.3", "0.44", "191.8", "434.7", "6.79"),
        (8, "Festr", "| Festr (dual Turin, direct-attach) | 0.84 (52.7 GB/s) |", "0.84", "52.7", "0.41", "173.1", "421.3", "6.03"),
        (8, "Grimulkan", "| Grimulkan (4x switches, single CPU) | 0.86 (53.9 GB/s) |", "0.86", "53.9", "0.38", "164.3", "431.2", "7.04"),
        (4, "luke", "| luke (1 switch) | 0.86 |", "0.86", None, "0.64", "138.3", "217.7", "4.10"),
        (4, "Festr", "| Festr (Turin, same NUMA) | 0.88 |", "0.88", None, "0.59", "129.7", "220.6", "2.28"),
    ):
        sec = sec8 if n == 8 else sec4
        src = cite(PB, needle, sec, "", link)
        gl = GPUS[:n]
        p = {"kind": "all-to-all", "gpus": gl}
        F.append(F_(f"{box}-{n}gpu-link-score", f"{box}: p2pmark PCIe link score, {n} GPUs", src, box, "p2pmark", "copy", "read", float(link), "score", pattern=p, note="score"))
        if avg:
            F.append(F_(f"{box}-{n}gpu-link-avg", f"{box}: p2pmark mean single-reader bandwidth, {n} GPUs", src, box, "p2pmark", "copy", "read", float(avg),
                        "aggregate-gbps", pattern=p, nbytes="64 MiB", note="mean over separate runs (derived)"))
        F.append(F_(f"{box}-{n}gpu-dense-score", f"{box}: p2pmark dense interconnect score, {n} GPUs", src, box, "p2pmark", "copy", "read", float(dense), "score", pattern=p, note="score"))
        F.append(F_(f"{box}-{n}gpu-all-read-all", f"{box}: p2pmark all GPUs read all peers at once, {n} GPUs", src, box, "p2pmark", "copy", "read", float(meas),
                    "aggregate-gbps", pattern=p, nbytes="64 MiB", note="sum of per-GPU rates; p2pmark version not stated on this page"))
        F.append(F_(f"{box}-{n}gpu-ideal", f"{box}: p2pmark ideal, {n} GPUs", src, box, "p2pmark", "copy", "read", float(ideal), "aggregate-gbps",
                    pattern=p, nbytes="64 MiB", note="sum of separate single-reader runs (derived)"))
        F.append(F_(f"{box}-{n}gpu-effective-latency", f"{box}: p2pmark effective latency, {n} GPUs", src, box, "p2pmark --latency", "sm", "read", float(lat),
                    "round-trip-latency-us", pattern=p, nbytes="128 B",
                    note=("p2pmark's README example prints 4.10 µs as the isolated best-pair latency, so which latency this is is uncertain"
                          if lat == "4.10" else "")))
    sec = "AMD Turin vs Genoa › DRAM Configuration Impact"
    for box, needle, v in (("Festr", "| Festr (Turin) | 24x96 GB DDR5-6400", "~99+"), ("orangezed", "| orangezed (Genoa) | 10x48 GB DDR5-4800", "~64")):
        F.append(F_(f"{box}-cross-numa-bidi-topology-md", f"{box}: cross-NUMA bidirectional bandwidth", cite(TP, needle, sec, "Cross-NUMA BW (bidir)", v), box,
                    "not stated", "copy", "bidirectional", float(v.strip("~+")), "aggregate-gbps", note="approximate ('~99+' / '~64')"))
    F.append(F_("broadcom-acs-off-scores", "Broadcom PEX890xx with ACS disabled: interconnect score 4 GPU / 8 GPU (0.96 / 0.90)",
                cite(TP, "With ACS disabled: interconnect score **0.96** (4 GPU) / **0.90** (8 GPU)", "PCIe Switches › Broadcom PEX890xx 144-Lane Switches", "", "0.96"),
                "broadcom", "p2pmark", "copy", "read", 0.96, "score",
                note="contradicts the ASUS page (0.58 for 4 GPUs, 0.12 for 8 with ACS off); 8-GPU value 0.90 on the same line"))
    sec = "Comparison with Other Topologies"
    for fid, needle, v, metric, op, what in (
        ("uni-same", "| **Single-flow BW** |", "55", "per-stream-gbps", "write", "single flow same NUMA"),
        ("uni-cross", "| **Single-flow BW** |", "45", "per-stream-gbps", "write", "single flow cross NUMA"),
        ("all-to-all", "| **8-GPU all-to-all** |", "190", "aggregate-gbps", "read", "8-GPU all-to-all"),
        ("latency-min", "| **1:1 latency** |", "0.76", "round-trip-latency-us", "read", "1:1 latency, low end"),
        ("latency-max", "| **1:1 latency** |", "0.84", "round-trip-latency-us", "read", "1:1 latency, high end"),
        ("concurrent-latency", "| **Concurrent latency** |", "3.28", "round-trip-latency-us", "read", "concurrent latency"),
    ):
        F.append(F_(f"turin-direct-{fid}", f"Turin direct-attach: {what}", cite(MS, needle, sec, "Turin direct-attach column", v), "turin-direct",
                    "p2pmark (presumed from the neighbouring columns)", "copy" if "latency" not in fid else "sm", op, float(v), metric,
                    note="comparison-table value; box not named"))
    return F


def judgement():
    return [
        ("NCCL allreduce busbw, 8 GPUs: luke 41.1, Grimulkan 39.4 / 40.1, Festr 37.6 / 22.2, purplepow3r (7 GPUs) 41.3-41.7 GB/s", cite_line(PB, "### 8-GPU Results")),
        ("luke's custom allreduce vs NCCL, 256 B – 256 KB (µs)", cite_line(PB, "### Custom Allreduce vs NCCL (Small Messages)")),
        ("P2P vs no-P2P inference throughput (tok/s)", cite_line(PB, "### P2P vs No-P2P for High Concurrency")),
        ("Measured AllReduce bus bandwidth (8 GPUs) table", cite_line(TP, "### Measured AllReduce Bus Bandwidth (8 GPUs)")),
    ]
