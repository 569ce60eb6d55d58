"""Request bodies as JSON without importing `json` (which brings `re` and `enum`: milliseconds of every
command): `dumps(v)` is `json.dumps(v, separators=(",", ":"))` for JSON's values (dicts, lists and
tuples, strings, numbers, booleans, None), ASCII-only as json's default writes it."""

from __future__ import annotations


class _Escapes(dict):
    """str.translate's table: a character to what JSON writes for it (made once a character)."""

    def __missing__(self, n: int) -> str:
        if 0x20 <= n < 0x7F:
            v = chr(n)
        elif n > 0xFFFF:  # (a surrogate pair, as json writes it)
            m = n - 0x10000
            v = f"\\u{0xD800 | m >> 10:04x}\\u{0xDC00 | m & 0x3FF:04x}"
        else:
            v = f"\\u{n:04x}"
        self[n] = v
        return v


_ESC = _Escapes({0x22: '\\"', 0x5C: "\\\\", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"})


def _str(s: str) -> str:
    return '"' + s.translate(_ESC) + '"'


def _float(f: float) -> str:
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "Infinity" if f > 0 else "-Infinity"
    return float.__repr__(f)


def _key(k: object) -> str:
    if isinstance(k, str):
        return _str(k)
    if k is True or k is False or k is None:
        return '"' + {True: "true", False: "false", None: "null"}[k] + '"'
    if isinstance(k, int):
        return '"' + int.__repr__(k) + '"'
    if isinstance(k, float):
        return '"' + _float(k) + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def dumps(v: object) -> str:
    """`v` as compact JSON (json.dumps(v, separators=(",", ":")))."""
    if isinstance(v, str):
        return _str(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, dict):
        return "{" + ",".join(_key(k) + ":" + dumps(x) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(dumps(x) for x in v) + "]"
    raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")
