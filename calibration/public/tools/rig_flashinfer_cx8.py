from rig_flashinfer import *

RIG = "flashinfer-4870-cx8"
TOPO = None
GPUS = [g(i) for i in range(8)]
BOXN = "CX8: 8x sm_120 GPUs (model not named), PCIe Gen5, switch pairs (0,1)(2,3)(4,5)(6,7), halves {0-3}/{4-7} ('pcieswitch-pairs'); CPU not stated"


def figures():
    return make("CX8", [
        ("single-hop-min", "one copy alone, low end of the range", "single hop, alone", "53.2", {"kind": "unstated", "gpus": []}, "range 53.2–55.0 over unnamed hops"),
        ("single-hop-max", "one copy alone, high end of the range", "single hop, alone", "55.0", {"kind": "unstated", "gpus": []}, "range 53.2–55.0 over unnamed hops"),
        ("intra-switch-pair-4", "intra-switch pairs at world size 4", "intra-island ring / intra-switch pair", "52.33", {"kind": "bidirectional-pairs", "pairs": [["gpu0", "gpu1"], ["gpu2", "gpu3"]]}, "'(4)'"),
        ("intra-switch-pair-8", "intra-switch pairs at world size 8", "intra-island ring / intra-switch pair", "52.37",
         {"kind": "bidirectional-pairs", "pairs": [["gpu0", "gpu1"], ["gpu2", "gpu3"], ["gpu4", "gpu5"], ["gpu6", "gpu7"]]}, "'(8)'"),
        ("flat-ring-4", "flat ring, 4 ranks", "flat ring, all ranks", "52.32", {"kind": "stagger", "distance": 1, "gpus": [g(i) for i in range(4)]}, "'(4)'; ranks 0-3 presumed"),
        ("flat-ring-8", "flat ring, 8 ranks", "flat ring, all ranks", "49.64", {"kind": "stagger", "distance": 1, "gpus": [g(i) for i in range(8)]}, "'(8)'"),
        ("cross-boundary", "all flows across the {0-3}/{4-7} boundary at once", "cross-boundary, all flows", "23.75", {"kind": "unstated", "gpus": []}, "which flows not stated"),
    ], BOXN)


def judgement():
    return [("PCIe IPC copy-engine all-reduce measured vs SOL floor (CX8 TP4/TP8; floors 2886 / 3549 µs)", SRC.replace("What the denominator is, table 'measured rate'", "Measured"))]
