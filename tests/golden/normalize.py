#!/usr/bin/python3
"""Normalizes a `gcspy report --format json` document for golden comparison.

What changes from build to build or machine to machine is removed or
reduced: the generator version, trace paths (basename kept), module paths
(basename kept), the addresses and offsets of frames that were symbolized
(they move when the test program is rebuilt; unresolved frames keep their
offset, which is what they show), byte offsets in damage messages (the
recorded addresses, and so the compressed sizes, change with ASLR). Each time series is reduced to its
length, its largest value and its number of non-null points, so the golden
file stays readable; the unit tests check the series themselves.

usage: normalize.py REPORT.json  (writes the normalized JSON to stdout)
"""
import json
import os
import re
import sys


def frame(f):
    if f.get("module"):
        f["module"] = os.path.basename(f["module"])
    f.pop("address", None)
    if f.get("function") is not None:
        f.pop("offset", None)
    return f


def stack(s):
    return [frame(f) for f in s] if s is not None else None


def series(v):
    vals = [x for x in v if x is not None]
    return {"points": len(v), "max": max(vals) if vals else None, "non_null": len(vals)}


def main():
    with open(sys.argv[1]) as fh:
        d = json.load(fh)
    d.pop("generator", None)
    for p in d["processes"]:
        p["trace"] = os.path.basename(p["trace"])
        if p.get("damage"):
            p["damage"] = re.sub(r"offset \d+", "offset N", p["damage"])
        if p.get("problem"):
            p["problem"] = re.sub(r"offset \d+", "offset N", p["problem"])
        for l in p.get("leaks", []):
            l["stack"] = stack(l["stack"])
        for g in p.get("growth", {}).get("suspects", []):
            g["stack"] = stack(g["stack"])
        for s in p.get("sites", []):
            s["stack"] = stack(s["stack"])
            if s.get("user_frame"):
                frame(s["user_frame"])
        views = [(p.get("peak") or {}).get("sites"), (p.get("temporary") or {}).get("sites")]
        for v in views:
            for s in v or []:
                s["stack"] = stack(s["stack"])
                if s.get("site"):
                    frame(s["site"])
        for f in p.get("findings", []):
            for k in ("user_frame", "site_frame"):
                if f.get(k):
                    frame(f[k])
        tl = p.get("timeline")
        if tl:
            for k in list(tl["live_bytes"]):
                tl["live_bytes"][k] = series(tl["live_bytes"][k])
            tl["rss"] = series(tl["rss"])
            for k in list(tl["malloc"]):
                tl["malloc"][k] = series(tl["malloc"][k])
            for dev in tl["devices"]:
                for k in ("reserved", "in_use", "segments", "largest_free"):
                    dev[k] = series(dev[k])
    d["symbol_problems"] = [
        os.path.basename(x.split(":")[0]) + ":" + x.split(":", 1)[1] for x in d["symbol_problems"]
    ]
    json.dump(d, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
