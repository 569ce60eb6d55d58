"""`slurmlet secrets put|list|delete`: secrets that air runs reference as `scope/key`.

    slurmlet secrets put SCOPE KEY [--value VALUE] [--account NAME]   (the value is read from stdin without --value)
    slurmlet secrets list
    slurmlet secrets delete SCOPE KEY [--account NAME]

A secret is its user's own; with --account it belongs to that account (the user must be one of its
members) and every member's runs may use it. A run resolves `scope/key` to its user's secret first,
then to its account's. Nobody else may read, replace, delete or list it.
"""

from __future__ import annotations

import sys
from urllib.parse import quote

from slurmlet.cli import http
from slurmlet.common.cred import current_user
from slurmlet.common.oneline import Parser

PROG = "slurmlet secrets"


def main(argv: list[str]) -> int:
    ap = Parser(prog=PROG, description="Secrets for air runs (values are never shown again).")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    put = sub.add_parser("put")
    put.add_argument("scope")
    put.add_argument("key")
    put.add_argument("--value", help="the value (default: read from stdin, without a final newline)")
    put.add_argument("--account", help="store it for this account's members (default: for yourself)")
    sub.add_parser("list")
    rm = sub.add_parser("delete")
    rm.add_argument("scope")
    rm.add_argument("key")
    rm.add_argument("--account", help="the account's secret (default: your own)")
    args = ap.parse_args(argv)
    me = current_user()[1]
    query = f"?user={quote(me, safe='')}" + (f"&account={quote(args.account, safe='')}"
                                             if getattr(args, "account", None) else "")
    if args.cmd == "put":
        for part, what in ((args.scope, "scope"), (args.key, "key")):
            if not part or "/" in part or any(ch.isspace() for ch in part):
                print(f"{PROG}: error: {what} {part!r}: no slashes or spaces", file=sys.stderr)
                return 2
        value = args.value if args.value is not None else sys.stdin.read().removesuffix("\n")
        http.request("PUT", f"/api/v1/secrets/{quote(args.scope)}/{quote(args.key)}{query}", {"value": value})
        print(f"stored {args.scope}/{args.key}")
    elif args.cmd == "list":
        for s in http.request("GET", f"/api/v1/secrets{query}", signed=True)["secrets"]:
            owner = s.get("owner") or ""
            print(f"{s['scope']}/{s['key']}" + ("" if owner == f"user:{me}" else f"  ({owner.replace(':', ' ', 1)})"))
    else:
        http.request("DELETE", f"/api/v1/secrets/{quote(args.scope)}/{quote(args.key)}{query}")
        print(f"deleted {args.scope}/{args.key}")
    return 0
