"""`slurmlet secrets put|list|delete`: secrets that air runs reference as `scope/key`.

    slurmlet secrets put SCOPE KEY [--value VALUE]   (the value is read from stdin without --value)
    slurmlet secrets list
    slurmlet secrets delete SCOPE KEY
"""

from __future__ import annotations

import sys

from slurmlet.cli import http
from slurmlet.common.oneline import Parser

PROG = "slurmlet secrets"


def main(argv: list[str]) -> int:
    ap = Parser(prog=PROG, description="Secrets for air runs (values are never shown again).")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    put = sub.add_parser("put")
    put.add_argument("scope")
    put.add_argument("key")
    put.add_argument("--value", help="the value (default: read from stdin, without a final newline)")
    sub.add_parser("list")
    rm = sub.add_parser("delete")
    rm.add_argument("scope")
    rm.add_argument("key")
    args = ap.parse_args(argv)
    if args.cmd == "put":
        for part, what in ((args.scope, "scope"), (args.key, "key")):
            if not part or "/" in part or any(ch.isspace() for ch in part):
                print(f"{PROG}: error: {what} {part!r}: no slashes or spaces", file=sys.stderr)
                return 2
        value = args.value if args.value is not None else sys.stdin.read().removesuffix("\n")
        http.request("PUT", f"/api/v1/secrets/{args.scope}/{args.key}", {"value": value})
        print(f"stored {args.scope}/{args.key}")
    elif args.cmd == "list":
        for s in http.request("GET", "/api/v1/secrets")["secrets"]:
            print(f"{s['scope']}/{s['key']}")
    else:
        http.request("DELETE", f"/api/v1/secrets/{args.scope}/{args.key}")
        print(f"deleted {args.scope}/{args.key}")
    return 0
