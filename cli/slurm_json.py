"""Slurm 22.05's JSON documents (`squeue --json`, `sinfo --json`, `sacct --json`): the `meta` block of the
data parser that printed them, and the text as 22.05 writes it (json-c's pretty form: two-space indents,
`/` written `\\/`, an empty list or object as its brackets on two lines, no newline after the last `}`)."""

from __future__ import annotations

import sys

#: the plugins of 22.05's meta blocks: squeue's and sinfo's (openapi/v0.0.38), sacct's (openapi/dbv0.0.38)
OPENAPI = ("openapi/v0.0.38", "Slurm OpenAPI v0.0.38")
OPENAPI_DB = ("openapi/dbv0.0.38", "Slurm OpenAPI DB v0.0.38")


def document(plugin: tuple[str, str], key: str, items: list) -> dict:
    """`{"meta": ..., "errors": [], key: items}` with `plugin` (OPENAPI or OPENAPI_DB) in the meta block and
    slurmlet's Slurm version (the one `--version` prints)."""
    return {"meta": {"plugin": {"type": plugin[0], "name": plugin[1]},
                     "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"}},
            "errors": [], key: items}


def seconds(t: float | None) -> int:
    """A time as 22.05's JSON gives it: whole seconds of the epoch, 0 for none."""
    return int(t) if t else 0


def _scalar(v: object) -> str:
    import json
    return json.dumps(v, ensure_ascii=False).replace("/", "\\/")


def dumps(v: object, indent: str = "") -> str:
    """`v` as 22.05 writes a document."""
    inner = indent + "  "
    if isinstance(v, dict):
        if not v:
            return "{\n" + indent + "}"
        return "{\n" + ",\n".join(f"{inner}{_scalar(str(k))}: {dumps(x, inner)}" for k, x in v.items()) + \
            "\n" + indent + "}"
    if isinstance(v, (list, tuple)):
        if not v:
            return "[\n" + indent + "]"
        return "[\n" + ",\n".join(inner + dumps(x, inner) for x in v) + "\n" + indent + "]"
    return _scalar(v)


def write(doc: dict) -> None:
    """Print `doc` as 22.05's commands do."""
    sys.stdout.write(dumps(doc))
    sys.stdout.flush()
