"""Slurm's print_fields (sacctmgr, sshare): right-justified columns cut with '+', or '|'-separated.

A column is (header, width, getter); `format=Name%W` picks columns and widths (negative: left).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Column = tuple[str, int, Callable[[Any], Any]]


def pick(fields: dict[str, Column], fmt: str | None, default: str, prog: str) -> list[Column]:
    """Columns from a `format=` list (names case-insensitive, `%W` widths), else the default list."""
    out = []
    for item in (fmt or default).split(","):
        item = item.strip()
        if not item:
            continue
        name, _, width = item.partition("%")
        col = fields.get(name.lower())
        if col is None:
            col = next((c for k, c in fields.items() if k.startswith(name.lower())), None) if len(name) > 2 else None
        if col is None:
            raise ValueError(f"Unknown field '{name}'")
        if width:
            try:
                col = (col[0], int(width), col[2])
            except ValueError:
                raise ValueError(f"Bad width in '{item}'") from None
        out.append(col)
    return out


def _cell(value: Any, width: int, mark: bool = True) -> str:
    """A value cut to its width with a '+' (`mark`; headers are cut without one), justified."""
    text = "" if value is None else str(value)
    w = abs(width)
    if len(text) > w:
        text = (text[:w - 1] + "+" if mark else text[:w]) if w > 0 else ""
    return text.ljust(w) if width < 0 else text.rjust(w)


def lines(cols: list[Column], rows: list, *, parsable: str | None = None, noheader: bool = False) -> list[str]:
    """Header, dashes and one line a row; `parsable`: "p" ('|' after every field) or "P" (between)."""
    out: list[str] = []
    if parsable:
        def join(cells: list[str]) -> str:
            return "|".join(cells) + ("|" if parsable == "p" else "")
        if not noheader:
            out.append(join([c[0] for c in cols]))
        for r in rows:
            out.append(join(["" if (v := c[2](r)) is None else str(v) for c in cols]))
        return out
    if not noheader:
        out.append("".join(_cell(c[0], c[1], False) + " " for c in cols))
        out.append("".join("-" * abs(c[1]) + " " for c in cols))
    for r in rows:
        out.append("".join(_cell(c[2](r), c[1]) + " " for c in cols))
    return out
