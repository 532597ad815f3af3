"""Figures the rig calibration (`contend calibrate --public`) sets aside:
each is a fit figure whose value no mechanism of the model can reach
together with the rest of its rig's figures, with the reason. make.py
turns them into `fit = false` and appends the reason to the figure's note,
so the figures file says why (calibration/public/README.md § Set aside by
the model).

Only figures whose value contradicts other figures of the same box under
any model in which each direction of a link is its own resource, or shows a
limit no other figure isolates, are listed; never to improve a fit.
"""

CHIP_A = {0, 1, 2, 3}

ASUS_BIDI_CROSS = (
    "cross-chip bidirectional pairs run 93-96 GB/s (p2pBandwidthLatencyTest) while one "
    "cross-chip flow runs 36-40 (p2pmark's matrix and the torch harness alike) and the page's "
    "own link map gives 70 for cross-chip bidirectional: a flow would have to run faster "
    "because the opposite direction is busy, which no mechanism with each direction its own "
    "resource does; the box's p2pBandwidthLatencyTest unidirectional matrix, which would tell "
    "the tool from the box, is not published"
)

ALL_READ_ALL = (
    "copy-engine reads among GPUs of one switch tree, every GPU reading every peer at once: "
    "{per} GB/s per GPU, where one read stream per GPU reaches 50 (the staggered probe) and one GPU "
    "reading all its peers alone reaches its link; the model's links, tags and windows allow "
    "~50 per GPU here: a limit of a GPU serving several readers at once that no figure isolates"
)


def marks(rig):
    """{figure id: reason} for one rig."""
    m = {}
    if rig == "asus-esc8000a-e13p":
        for i in range(8):
            for j in range(8):
                if i != j and ((i in CHIP_A) != (j in CHIP_A)):
                    m[f"bidi-{i}-{j}"] = ASUS_BIDI_CROSS
        m["collapse-test-2flow-diff-vs-read"] = (
            "as executed, GPU4->GPU0 + GPU6->GPU2 (two remote root ports into two virtual "
            "switches) at 44.8 GB/s, below GPU4->GPU0 + GPU6->GPU1 (the same ports into one "
            "virtual switch's link, no-collapse-reverse) at 51.2: spreading the destinations over "
            "more links cannot lower the rate under any sharing of the links"
        )
        m["p2pmark-4gpu-all-read-all"] = ALL_READ_ALL.format(per="32")
        m["ds-port-same-gpu-2"] = (
            "one GPU writing a cross-chip peer and a same-chip peer at once gets 42.8 GB/s, where "
            "its cross-chip flow alone runs 36.8-37.7 and the GPU's link 53.9: the model (at both "
            "fidelities) gives the same-chip flow what the cross-socket cap leaves of the link "
            "(50.8 in all); the same two flows on the WRX90 boxes reach the link (52.5, 53.9), so "
            "the loss is this box's, and no other figure isolates it"
        )
    if rig == "wrx90-pm50100-2switch-flat":
        m["p2pmark-4gpu-all-read-all"] = ALL_READ_ALL.format(per="30")
    if rig == "wrx90-pm50100-3switch-hier":
        m["p2pmark-4gpu-all-read-all"] = ALL_READ_ALL.format(per="31.5")
        m["p2pmark-8gpu-all-read-all"] = ALL_READ_ALL.format(per="24.5")
    if rig == "wrx90-pm50100-2vs":
        m["V1-cr-2flow-diff-vs"] = (
            "95.2 GB/s for GPU0->GPU2 + GPU4->GPU6 on the wiring the figure assumes (V1), where "
            "the two flows share no resource (each stays under its own root complex) and the "
            "rig's other two-flow figures on independent paths reach 112-112.5: the assumed "
            "wiring or the run differs from the rest"
        )
        m["V3-asus-4flow-pattern"] = (
            "75.9 GB/s for two GPUs each writing one peer across the chip's internal fabric and "
            "one through the uplink, where each GPU's own link (54-56 alone on this box) is the "
            "only shared resource the model sees (it gives 108); a loss when one GPU's writes "
            "split between the fabric and the uplink that no other figure of the rig isolates "
            "(V1 and V2 run the pattern through one uplink and agree with the model)"
        )
    return m


def apply(rig, figs):
    """Sets the marked figures to fit = false with the reason; every mark
    must name a fit figure of the rig."""
    m = marks(rig)
    ids = {f["id"] for f in figs}
    missing = set(m) - ids
    assert not missing, (rig, sorted(missing))
    for f in figs:
        why = m.get(f["id"])
        if why is None:
            continue
        assert f["fit"], (rig, f["id"], "already fit = false")
        f["fit"] = False
        note = f.get("note", "")
        f["note"] = (note + "; " if note else "") + "set aside by the rig calibration: " + why
    return figs
