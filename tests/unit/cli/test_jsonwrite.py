"""cli/jsonwrite.dumps writes what json.dumps(separators=(",", ":")) writes, for any of JSON's values."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from slurmlet.cli.jsonwrite import dumps

_text = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF))
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | _text,
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner) |
    st.dictionaries(_text | st.integers() | st.booleans() | st.none() | st.floats(), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(_values)
def test_dumps_writes_what_json_writes(v: object) -> None:
    assert dumps(v) == json.dumps(v, separators=(",", ":"))


def test_every_character_is_escaped_as_json_escapes_it() -> None:
    every = "".join(chr(i) for i in range(0x110000))
    assert dumps(every) == json.dumps(every)


def test_what_json_cannot_write_is_refused_as_json_refuses_it() -> None:
    for bad in ({1, 2}, b"x", {"a": object()}, {(1, 2): 3}):
        try:
            json.dumps(bad)
        except TypeError:
            pass
        else:
            raise AssertionError(bad)
        try:
            dumps(bad)
        except TypeError:
            continue
        raise AssertionError(bad)
    assert math.isnan(json.loads(dumps(float("nan"))))
