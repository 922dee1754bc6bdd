#!/usr/bin/env python3
"""Prints the release sets (as the `releases:` expression of a table entry), aliases and defaults of the flags in crates/pdlaunch-core/src/flags.rs
from the embedded argparse specs. A maintenance aid: the flag table is written by hand, and the
`flag_table_agrees_with_specs` test fails when it disagrees with the specs."""
import json, sys, pathlib
spec_dir = pathlib.Path(__file__).resolve().parent.parent / "crates/pdlaunch-core/spec"
server = ["0.4.10.post2", "0.5.1.post3", "0.5.3.post3", "0.5.6.post2", "0.5.10.post1", "0.5.19", "0.5.23"]
router = ["0.1.9", "0.2.1", "0.2.3", "0.3.2"]
def load(kind, v):
    d = json.load(open(spec_dir / f"{kind}-args-{v}.json"))
    return {s: f for f in d["flags"] for s in f["flags"]}
kind = sys.argv[1] if len(sys.argv) > 1 else "server"
vers = server if kind == "server" else router
specs = [load(kind, v) for v in vers]
def ident(v):
    return "V" + "_".join(v.split(".post")[0].split("."))
def releases(present):
    idx = [i for i, p in enumerate(present) if p]
    if not idx:
        return "(in no release)"
    lo, hi = idx[0], idx[-1]
    if idx != list(range(lo, hi + 1)):
        return "(not one range: " + ", ".join(vers[i] for i in idx) + ")"
    if kind != "server":
        return "ROUTER_ALL" if lo == 0 else f"router_since(RouterRelease::{ident(vers[lo])})"
    if lo == 0 and hi == len(vers) - 1:
        return "ALL"
    if hi == len(vers) - 1:
        return f"since(Release::{ident(vers[lo])})"
    if lo == 0:
        return f"until(Release::{ident(vers[hi])})"
    return f"between(Release::{ident(vers[lo])}, Release::{ident(vers[hi])})"
for name in sys.argv[2:]:
    present = [name in s for s in specs]
    latest = next((s[name] for s in reversed(specs) if name in s), None)
    print(name, releases(present), latest and latest["flags"], latest and latest["default"], latest and latest["type"], latest and latest["action"])
