#!/usr/bin/env python3
"""Prints the release masks, aliases and defaults of the flags in crates/pdlaunch-core/src/flags.rs
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
for name in sys.argv[2:]:
    mask = sum(1 << i for i, s in enumerate(specs) if name in s)
    latest = next((s[name] for s in reversed(specs) if name in s), None)
    print(name, f"0b{mask:0{len(vers)}b}", latest and latest["flags"], latest and latest["default"], latest and latest["type"], latest and latest["action"])
