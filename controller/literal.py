"""Request bodies sent as Python literals (common/wire.py: the CLI's), read as `ast.literal_eval`
reads them, the CLI's own several times faster.

The CLI writes a body with `ascii()`: dicts, lists, strings, numbers, True, False and None, and
nearly all its strings are plain (no backslash, no quote of the other kind inside). Such a text is
JSON but for its single quotes and those three names, and the json module's C parser reads it once
they are changed. `read` changes them only outside the strings and only where the meaning is the
same in both languages:
- a string with an escape JSON does not share (anything but `\\\\ \\n \\t \\r \\"`: `\\x`, `\\u`,
  `\\'`, a line continuation, ...), or a single-quoted one with a `"` inside, is read by
  `ast.literal_eval` alone, as its own token, and written as JSON;
- between the strings only brackets, braces, colons, commas, spaces (no other white space),
  digits, `-+.eE` and the three names may stand: anything else (a tuple, a set, a name, a prefix such as b'', a comment, a
  continuation line) sends the whole body to `ast.literal_eval`;
- whatever the JSON parser then refuses (a misplaced comma, two strings side by side, an infinite
  number) goes to `ast.literal_eval` whole too.
So a body means exactly what `ast.literal_eval` and a JSON round trip make of it, and is refused
exactly when they refuse it (tests/unit/controller/test_literal.py compares them on generated texts).
"""

from __future__ import annotations

import ast
import json
import re

from slurmlet.common import wire

from .errors import InvalidRequest

#: a quoted string of one line (escapes included); prefixes and triple quotes are left outside it
_STRING = re.compile(r"""('[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*")""", re.S)
#: an escape whose meaning is not the same in a JSON string (checked after `\\` pairs may overlap:
#: a false alarm only sends that string to literal_eval)
_OTHER_ESCAPE = re.compile(r'\\[^\\ntr"]')
#: what may stand between strings (joined by NUL)
_BETWEEN = re.compile(r"(?:[\x00 \[\]{}:,0-9.eE+\-]|True|False|None)*")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # (JSON reads 1e999 as infinity: literal_eval's refusal decides)
        raise ValueError(text)
    return value


def _as_json(token: str) -> str:
    """One string token as a JSON string of the same value."""
    inner = token[1:-1]
    if "\\" in inner and _OTHER_ESCAPE.search(inner):
        return json.dumps(ast.literal_eval(token))
    if token[0] == '"':
        return token
    if '"' in inner:
        return json.dumps(ast.literal_eval(token))
    return f'"{inner}"'


def _fast(text: str) -> object:
    """The value of a text of plain JSON-like literals; ValueError when it is anything else."""
    if "\x00" in text:  # (the separator below; never in a literal anyway)
        raise ValueError("NUL")
    if '"' not in text and not ("\\" in text and _OTHER_ESCAPE.search(text)):
        # the CLI's usual body: every quote is a single quote that opens or closes a plain string
        parts, quote = text.split("'"), '"'
    else:
        parts, quote = _STRING.split(text), ""
        parts[1::2] = [_as_json(p) for p in parts[1::2]]
    between = "\x00".join(parts[0::2])
    if len(parts) % 2 == 0 or not _BETWEEN.fullmatch(between):
        raise ValueError("not only JSON's kinds of literals")
    parts[0::2] = between.replace("True", "true").replace("False", "false").replace("None", "null").split("\x00")
    return json.loads(quote.join(parts), parse_float=_finite)


def _slow(text: str) -> object:
    """ast.literal_eval's value, as JSON carries it (tuples as lists, keys as strings); InvalidRequest
    when it is not a literal or not one JSON can carry."""
    try:
        value = ast.literal_eval(text)
        return json.loads(json.dumps(value, allow_nan=False, separators=(",", ":")))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        raise InvalidRequest(f"the body is not a Python literal JSON can carry: {type(e).__name__}") from None


def read(body: bytes) -> object:
    """A Python-literal request body's value, as its JSON would be read (InvalidRequest when it is
    not a literal, is one JSON cannot carry, or is over wire.LITERAL_MAX bytes)."""
    if len(body) > wire.LITERAL_MAX:
        raise InvalidRequest(f"a body sent as {wire.LITERAL} may be at most {wire.LITERAL_MAX} bytes; send JSON")
    if not body.strip():
        return None
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidRequest("the body is not a Python literal JSON can carry: UnicodeDecodeError") from None
    try:
        return _fast(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _slow(text)


def to_json(body: bytes) -> bytes:
    """A Python-literal request body as JSON (InvalidRequest as `read`)."""
    return json.dumps(read(body), allow_nan=False, separators=(",", ":")).encode()
