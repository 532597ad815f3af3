from rig_flashinfer import *

RIG = "flashinfer-4870-cx7"
TOPO = None
GPUS = [g(i) for i in range(8)]
BOXN = "CX7: 8x L40S, PCIe Gen4, 4+4 NUMA islands, no switch ('rootcplx-noswitch'); CPU not stated"


def figures():
    isl = lambda k: [g(i) for i in range(k)]
    return make("CX7", [
        ("single-hop", "one copy alone", "single hop, alone", "26.26", {"kind": "unstated", "gpus": []}, "pair not stated"),
        ("intra-island-ring-4", "ring over the 4 GPUs of one island, all hops at once", "intra-island ring / intra-switch pair", "25.46",
         {"kind": "stagger", "distance": 1, "gpus": isl(4)}, "'(4)' = world size 4; island GPUs presumed 0-3"),
        ("intra-island-ring-8", "intra-island rings at world size 8 (both islands at once)", "intra-island ring / intra-switch pair", "25.43",
         {"kind": "unstated", "gpus": []}, "'(8)' = world size 8"),
        ("flat-ring", "flat ring over all ranks", "flat ring, all ranks", "20.75", {"kind": "stagger", "distance": 1, "gpus": isl(8)}, "world size 8 presumed"),
        ("cross-boundary", "all cross-island flows at once", "cross-boundary, all flows", "9.70", {"kind": "unstated", "gpus": []}, "which flows not stated"),
    ], BOXN)


def judgement():
    return [("PCIe IPC copy-engine all-reduce measured vs SOL floor (CX7 TP4/TP8; floors 5932 / 8532 µs)", SRC.replace("What the denominator is, table 'measured rate'", "Measured"))]
