"""JSON without the `json` package: its decoder compiles regular expressions at import, which
costs a short-lived CLI process more than the request itself. The C scanner and string encoder
of `_json` do the same work without `re`."""

from __future__ import annotations

import _json


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.lower().replace("infinity", "inf"))


_scan = _json.make_scanner(_Context())


def loads(data: bytes | str) -> object:
    s = data.decode("utf-8") if isinstance(data, bytes) else data
    i = 0
    n = len(s)
    while i < n and s[i] in " \t\r\n":
        i += 1
    try:
        obj, end = _scan(s, i)
    except StopIteration as e:
        raise ValueError(f"invalid JSON at offset {e.value}") from None
    if s[end:].strip():
        raise ValueError(f"extra data in JSON at offset {end}")
    return obj


def dumps(obj: object) -> str:
    out: list[str] = []
    _enc(obj, out)
    return "".join(out)


def _enc(o: object, out: list[str]) -> None:
    if o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif isinstance(o, str):
        out.append(_json.encode_basestring_ascii(o))
    elif isinstance(o, (int, float)):
        out.append(repr(o) if isinstance(o, float) else str(int(o)))
    elif isinstance(o, dict):
        out.append("{")
        for k, (key, v) in enumerate(o.items()):
            if k:
                out.append(",")
            out.append(_json.encode_basestring_ascii(str(key)))
            out.append(":")
            _enc(v, out)
        out.append("}")
    elif isinstance(o, (list, tuple)):
        out.append("[")
        for k, v in enumerate(o):
            if k:
                out.append(",")
            _enc(v, out)
        out.append("]")
    else:
        raise TypeError(f"not JSON serializable: {type(o).__name__}")
