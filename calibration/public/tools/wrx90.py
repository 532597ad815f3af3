"""Topology builders for the ASRock WRX90 WS EVO + Threadripper PRO 7955WX rigs
with c-payne Microchip Switchtec PM50100 switches."""

from common import *

W16 = "hardware/wrx90-cpayne-16gpu-4switch.md"
CR = "hardware/collapse-report.md"
RTC = "hardware/wrx90-cpayne-8gpu-root-topology-comparison.md"
MS = "hardware/wrx90-cpayne-microchip-switches.md"
FLAT = "hardware/wrx90-cpayne-2switch-flat.md"
VS2 = "hardware/wrx90-cpayne-8gpu-2vs-per-chip.md"

QUAD = {"rc00": ("Q0", "pci0000:00"), "rc20": ("Q1", "pci0000:20"), "rc40": ("Q2", "pci0000:40"), "rce0": ("Q3", "pci0000:e0")}

MPS_NOTE = (f"MPS 256 B as stated for this WRX90 board with the same c-payne PM50100 switches ({MS} § MaxReadReq table); "
            "not restated for this cabling")

STACK_CURRENT = ("BIOS 12.09 (2026-02-04), Linux 6.18.24-061824-generic, NVIDIA 595.58.03 (open), CUDA 13.2, "
                 "amd_iommu=off iommu=off, ACS Request-Redirect cleared on every bridge")
STACK_OLD = ("Linux 6.17.0-19-generic, NVIDIA 595.45.04 (open), CUDA 13.2, BIOS not recorded; "
             "ACS Request-Redirect cleared")


MEM_NOTE = (f"8 channels ({CR} § System Under Test: 256 GB DDR5 RDIMM ECC, 8-channel) x DDR5-5600 ({W16} § System Overview) x 8 B; "
            "DIMM rating, running speed not stated")


def four_switch(name, cabling, platform, source, comment, gpu_model, sw_subset=(1, 2, 3, 4), collapse=None, extra_note=""):
    """cabling: {sw: (rc, port)}; GPU ids gpu(4*(sw-1)+k)."""
    t = Topo(name, source, platform, comment)
    for sw in sw_subset:
        for k in range(4):
            i = 4 * (sw - 1) + k
            t.gpu(i, gpu_model, f"CUDA GPU {i} on SW{sw} ({W16} § GPU index → switch mapping){extra_note}")
    for sw in sw_subset:
        rc, port = cabling[sw]
        t.node(f"sw{sw}", "switch", chip=f"pm50100-sw{sw}", mrrs=128,
               note=(f"c-payne PM50100 Gen5 switch SW{sw}, its own chip (2-pair test: 56 GB/s across switches vs 112 within, {W16} "
                     f"§ Single-Pair P2P Bandwidth); downstream-port MaxReadReq hardcoded 128 B ({W16} § MaxReadReq); "
                     f"10-bit tag state not stated; latency not published (fit)"))
    rcs = sorted({cabling[sw][0] for sw in sw_subset}, key=lambda r: list(QUAD).index(r))
    for rc in rcs:
        qd, dom = QUAD[rc]
        ports = ", ".join(f"SW{sw} on {cabling[sw][1]}" for sw in sw_subset if cabling[sw][0] == rc)
        t.node(rc, "root_complex", socket=0,
               note=f"TR PRO 7955WX I/O-die quadrant {qd}, root bus {dom}: {ports}; latency and P2P caps not published (fit)",
               collapse=collapse)
    t.node("iod0", "cpu_interconnect", socket=0,
           note=f"TR PRO 7955WX single I/O die joining the quadrants; inter-quadrant hop ~10 ns one way per {RTC} § 2b (fit)")
    t.node("mem0", "host_memory", socket=0, note="256 GB DDR5, one NUMA node")
    for sw in sw_subset:
        for k in range(4):
            i = 4 * (sw - 1) + k
            t.pcie5(g(i), f"sw{sw}", mps=256, mrrs=512,
                    note=f"GPU{i} Gen5 x16 to SW{sw} downstream port (trained Gen5 x16 under load, {W16} § PCIe links); GPU MaxReadReq 512 B; {MPS_NOTE}")
    for sw in sw_subset:
        rc, port = cabling[sw]
        t.pcie5(f"sw{sw}", rc, mps=256, note=f"SW{sw} Gen5 x16 uplink to root port {port} ({QUAD[rc][0]}); {MPS_NOTE}")
    for rc in rcs:
        t.link(rc, "iod0", "die", note=f"{rc} on the I/O die")
    t.link("mem0", "iod0", "memory", bandwidth_gbps=358.4, note=MEM_NOTE)
    return t


CABLING = {
    "2root": {1: ("rc00", "a root port of root bus 00 (not named)"), 2: ("rc00", "another root port of root bus 00 (not named)"),
              3: ("rce0", "a root port of root bus e0 (not named)"), 4: ("rce0", "another root port of root bus e0 (not named)")},
    "3root": {1: ("rc00", "00:01.1"), 2: ("rc40", "40:01.1"), 3: ("rce0", "e0:01.1"), 4: ("rce0", "e0:03.1")},
    "4root": {1: ("rc00", "00:01.1"), 2: ("rc20", "20:01.1"), 3: ("rc40", "40:01.1"), 4: ("rce0", "e0:03.1")},
}
