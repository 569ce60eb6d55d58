"""sinfo: partitions and nodes."""

from __future__ import annotations

import sys
import time

from slurmlet.cli import common, http
from slurmlet.cli.argv import Opt

TABLE: list[Opt] = [
    ("N", "Node", 0, "node"), ("l", "long", 0, "long"), ("s", "summarize", 0, "summarize"),
    ("o", "format", 1, "format"), ("O", "Format", 1, "Format"), ("R", "list-reasons", 0, "reasons"),
    ("h", "noheader", 0, "noheader"), ("p", "partition", 1, "partition"), ("n", "nodes", 1, "nodes"),
    ("t", "states", 1, "states"), ("S", "sort", 1, "sort"), ("a", "all", 0, "all"), ("d", "dead", 0, "dead"),
    ("r", "responding", 0, "responding"), ("e", "exact", 0, "exact"), ("i", "iterate", 1, "iterate"),
    ("v", "verbose", 0, "verbose"), ("V", "version", 0, "version"), ("", "help", 0, "help"),
    ("", "usage", 0, "usage"), ("", "json", 0, "json"), ("M", "clusters", 1, "clusters"),
    ("", "hide", 0, "hide"), ("", "local", 0, "local"), ("T", "reservation", 0, "reservation"),
    # (the sizes sinfo prints are the nodes' megabytes as configured: there is nothing to convert)
    ("", "noconvert", 0, "noconvert"),
]


USAGE = ("Usage: sinfo [-adelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]\n"
         "             [-S fields] [-o format] [-O Format] [--json]")


def main(argv: list[str]) -> int:
    res = common.command_options("sinfo", argv, TABLE, USAGE)
    if isinstance(res, int):
        return res
    o, _pos = res
    clusters = None
    if "clusters" in o:
        from slurmlet.cli.clusters import check
        clusters = check("sinfo", o["clusters"][-1] or "")
        if clusters is None:
            return 1
    data = http.request("GET", "/api/v1/cluster")
    nodes, parts = data["nodes"], data["partitions"]
    if "json" in o:  # (22.05 prints every node, whatever the filters say)
        from slurmlet.cli import sinfo_json, slurm_json
        slurm_json.write(sinfo_json.document(nodes))
        return 0
    if "partition" in o:
        want = set(common.split_list(o["partition"]))
        parts = [p for p in parts if p["name"] in want]
    if "nodes" in o:
        from slurmlet.cli.hosts import expand_hostlist
        want_nodes = set(x for v in o["nodes"] for x in expand_hostlist(v))
        nodes = [n for n in nodes if n["name"] in want_nodes]
    if "states" in o:
        want_states = {s.strip().upper() for s in common.split_list(o["states"])}
        alias = {"ALLOC": "ALLOCATED", "MIX": "MIXED", "DRAIN": "DRAINED", "DRNG": "DRAINING"}
        want_states = {alias.get(s, s) for s in want_states}
        nodes = [n for n in nodes if n["state"].rstrip("*") in want_states or
                 (n["state"].startswith("DRAIN") and "DRAIN" in want_states)]
    if "responding" in o:
        nodes = [n for n in nodes if n["state"] != "DOWN"]
    if "dead" in o:
        nodes = [n for n in nodes if n["state"] == "DOWN"]
    from slurmlet.cli import render_sinfo as render
    try:
        lines = render.sinfo_lines(nodes, parts, node_oriented="node" in o, long="long" in o,
                                   summarize="summarize" in o, fmt=o["format"][-1] if "format" in o else None,
                                   long_fmt=o["Format"][-1] if "Format" in o else None,
                                   noheader="noheader" in o, reasons="reasons" in o, now=time.time(),
                                   sort=o["sort"][-1] if "sort" in o else None)
    except ValueError as e:
        print(f"sinfo: error: {e}", file=sys.stderr)
        return 1
    if clusters and "noheader" not in o:  # as Slurm's sinfo -M: which cluster the lines are of
        lines = [f"CLUSTER: {clusters[0]}", *lines]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0
