"""Helpers for figures from GitHub threads and READMEs (no line numbers:
the thread is cited by URL, comment author/date and the table cell)."""

from common import *


def ext(fid, what, source, tool, engine, op, value, metric, note, fit=False, streams=None, pattern=None, nbytes=None, box=None, topology=None):
    f = {"id": fid, "what": what, "source": source}
    if topology:
        f["topology"] = topology
    f.update(tool=tool, engine=engine, op=op)
    if streams is not None:
        f["streams"] = streams
    else:
        f["pattern"] = pattern or {"kind": "unstated", "gpus": []}
    if nbytes:
        f["bytes"] = nbytes
    f.update(value=value, metric=metric, fit=fit)
    if box:
        f["box"] = box
    f["note"] = note
    return f


def parse_matrix(text):
    """{row: [cells]} from a pasted p2pBandwidthLatencyTest matrix body."""
    rows = {}
    for line in text.strip("\n").split("\n"):
        t = line.split()
        rows[int(t[0])] = t[1:]
    return rows
