"""The header line before each task stream an agent opens to srun: words or JSON, read back alike."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from slurmlet.common import streamhead

values = st.one_of(st.integers(-10**20, 10**20), st.booleans(), st.text(max_size=12))
headers = st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=6)


def test_an_exit_header_as_words():
    line = streamhead.write({"rank": 3, "stream": "exit", "code": 1, "signal": 0, "node": "node-1", "oom": True},
                            words=True)
    assert line == b"rank=3 stream=exit code=1 signal=0 node=node-1 oom=1\n"
    assert streamhead.read(line) == {"rank": 3, "stream": "exit", "code": 1, "signal": 0, "node": "node-1", "oom": 1}


def test_what_does_not_fit_in_words_is_json():
    for header in ({"rank": 0, "node": "a b"}, {"rank": 0, "node": "42"}, {"rank": 0, "node": "x=y"},
                   {"rank": 0, "node": ""}, {"rank": 0, "node": "nœud"}, {"rank": 10**19}):
        line = streamhead.write(header, words=True)
        assert json.loads(line) == header and streamhead.read(line) == header


@given(headers, st.booleans())
def test_a_header_reads_back_as_written(header: dict, words: bool):
    assert streamhead.read(streamhead.write(header, words)) == header  # (a flag as words reads back as 1 or 0)


@given(st.binary(max_size=200))
def test_any_line_reads_as_a_dict(line: bytes):  # anyone may connect to srun's port
    assert isinstance(streamhead.read(line), dict)


def test_a_deeply_nested_json_line_reads_as_nothing():
    assert streamhead.read(b'{"a":' + b"[" * 60000) == {}
