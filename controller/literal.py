"""Request bodies sent as Python literals (common/wire.py: the CLI's), read as `ast.literal_eval`
reads them, the CLI's own several times faster.

The CLI writes a body with `ascii()`: dicts, lists, strings, numbers, True, False and None, and
nearly all its strings are plain (no backslash, no quote of the other kind inside). Such a text is
JSON but for its single quotes and those three names, and the json module's C parser reads it once
they are changed. `read` changes them only outside the strings and only where the meaning is the
same in both languages:
- a string with an escape JSON does not share (anything but `\\\\ \\n \\t \\r \\"`: `\\x`, `\\u`,
  `\\'`, a line continuation, ...), or a single-quoted one with a `"` inside, is read by
  `ast.literal_eval` alone, as its own token, and written as JSON (up to MAX_ESCAPED of them);
- between the strings only brackets, braces, colons, commas, spaces (no other white space),
  digits, `-+.eE` and the three names may stand: anything else (a tuple, a set, a name, a prefix
  such as b'', a comment, a quote that opens no string of one line, such as a triple quote), or more
  than MAX_BRACKETS brackets (Python's parser refuses them nested deeper, json's does not), sends the
  whole body to `ast.literal_eval`;
- whatever the JSON parser then refuses (a misplaced comma, two strings side by side, an infinite
  number) goes to `ast.literal_eval` whole too.
The scans are linear in the body: the strings are found left to right, never scanned again.
So a body means exactly what `ast.literal_eval` and a JSON round trip make of it, and is refused
exactly when they refuse it (tests/unit/controller/test_literal.py compares them on generated texts).
"""

from __future__ import annotations

import ast
import json
import re

from slurmlet.common import wire

from .errors import InvalidRequest

#: a quoted string of one line (escapes included), or a quote that opens none (prefixes and triple
#: quotes are left outside strings: such a text goes to literal_eval)
_STRING = re.compile(r"""('[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*")|['"]""", re.S)
#: an escape whose meaning is not the same in a JSON string (checked after `\\` pairs may overlap:
#: a false alarm only sends that string to literal_eval)
_OTHER_ESCAPE = re.compile(r'\\[^\\ntr"]')
#: what may stand between strings (joined by NUL)
_BETWEEN = re.compile(r"(?:[\x00 \[\]{}:,0-9.eE+\-]|True|False|None)*")
#: Python's parser refuses brackets nested deeper than this, where json's goes on: a text with more
#: brackets than this outside its strings goes to literal_eval
MAX_BRACKETS = 200
#: strings a text may have that only literal_eval reads (each such call costs some 10 us): more, and
#: the whole text goes to it
MAX_ESCAPED = 8


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # (JSON reads 1e999 as infinity: literal_eval's refusal decides)
        raise ValueError(text)
    return value


def _as_json(token: str) -> str | None:
    """One string token as a JSON string of the same value; None where only literal_eval reads it
    (an escape JSON does not share, or a double quote in a single-quoted string)."""
    inner = token[1:-1]
    if "\\" in inner and _OTHER_ESCAPE.search(inner):
        return None
    if token[0] == '"':
        return token
    if '"' in inner:
        return None
    return f'"{inner}"'


def _strings(text: str) -> list[str]:
    """`text` cut at its strings: [between, string as JSON, between, ...]. ValueError at a quote that
    opens no string of one line (the scan never goes back: linear in the text), or with more than
    MAX_ESCAPED strings only literal_eval reads."""
    parts, at, escaped = [], 0, 0
    for m in _STRING.finditer(text):
        token = m.group(1)
        if token is None:
            raise ValueError("a quote that opens no string of one line")
        as_json = _as_json(token)
        if as_json is None:
            escaped += 1
            if escaped > MAX_ESCAPED:
                raise ValueError("many strings only literal_eval reads")
            as_json = json.dumps(ast.literal_eval(token))
        parts += (text[at:m.start()], as_json)
        at = m.end()
    parts.append(text[at:])
    return parts


def _fast(text: str) -> object:
    """The value of a text of plain JSON-like literals; ValueError when it is anything else."""
    if "\x00" in text:  # (the separator below; never in a literal anyway)
        raise ValueError("NUL")
    if '"' not in text and not ("\\" in text and _OTHER_ESCAPE.search(text)):
        # the CLI's usual body: every quote is a single quote that opens or closes a plain string
        parts, quote = text.split("'"), '"'
    else:
        parts, quote = _strings(text), ""
    between = "\x00".join(parts[0::2])
    if len(parts) % 2 == 0 or not _BETWEEN.fullmatch(between) or \
            between.count("[") + between.count("{") > MAX_BRACKETS:
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
