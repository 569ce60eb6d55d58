"""controller/literal.py reads a Python-literal body as `ast.literal_eval` and a JSON round trip
read it: the same value, or a refusal exactly where they refuse. Compared on the bodies the CLI
sends and on generated texts, plain and hostile."""

from __future__ import annotations

import ast
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmlet.cli.opts import parse_sbatch
from slurmlet.common import wire
from slurmlet.controller import literal
from slurmlet.controller.errors import InvalidRequest

# (literal_eval warns of escapes Python does not know, which the generated texts hold)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")


def reference(body: bytes) -> object:
    """What the controller made of a literal body before literal.py: literal_eval, then JSON."""
    if len(body) > wire.LITERAL_MAX:
        return "refused"
    try:
        value = ast.literal_eval(body.decode("ascii")) if body.strip() else None
        return json.loads(json.dumps(value, allow_nan=False, separators=(",", ":")))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return "refused"


def outcome(body: bytes) -> object:
    try:
        return literal.read(body)
    except InvalidRequest:
        return "refused"


def same(body: bytes) -> None:
    want, got = reference(body), outcome(body)
    assert got == want and json.dumps(got) == json.dumps(want), body  # (1 == 1.0 == True: the dumps tell)


def fast_path(text: str) -> bool:
    try:
        literal._fast(text)
        return True
    except (ValueError, SyntaxError):
        return False


def submission(argv: list[str], script: str, env: dict[str, str]) -> bytes:
    req = parse_sbatch(argv, env=env, cwd="/tmp", read_stdin=lambda: script)
    return ascii(req["submit"]).encode("ascii")


@pytest.mark.parametrize("script", [
    "",  # (--wrap)
    "#!/bin/bash\n#SBATCH -N 2\nsrun python train.py --lr 0.1\n",
    "#!/bin/bash\necho \"it's $USER\" 'quoted'\tand\\ttabs \\\\ \\x41 é ☃ \U0001f600\n",
    "#!/bin/sh\nprintf '%s\\n' \"$(cat <<'EOF'\nNone True False 1e999 {'a': (1, 2)}\nEOF\n)\"\n",
])
def test_the_cli_s_own_bodies_read_as_literal_eval_reads_them(script: str):
    env = dict(os.environ, ODD="a'b\"c\\d", BYTES="\udcff\udc80x", EMPTY="", NUMBERISH="1e5", WORDS="None True")
    body = submission(["-H", "--wrap", "true"] if not script else ["-H"], script, env)
    same(body)


def test_a_plain_body_takes_the_fast_way():
    """The CLI's usual submission (no quote or backslash escape of its own in the script or the
    environment) never reaches ast.literal_eval."""
    env = {"PATH": "/usr/bin:/bin", "HOME": "/home/alice", "USER": "alice", "LANG": "C.UTF-8"}
    body = submission(["-H", "--wrap", "python train.py --epochs 3"], "", env)
    assert fast_path(body.decode())
    same(body)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=1500, deadline=None)
@given(json_values)
def test_whatever_ascii_writes_reads_back(value: object):
    body = ascii(value).encode("ascii")
    same(body)
    assert outcome(body) == json.loads(json.dumps(value))


#: pieces of literals and of what is not one: quotes, escapes, the names, numbers, prefixes,
#: tuples, sets, calls, comments, white space, NUL
PIECES = ["'", '"', "\\", "\\'", '\\"', "\\n", "\\t", "\\x41", "\\u00e9", "\\ud83d\\ude00", "\\U0001f600", "\\\n",
          "\\N{BULLET}", "'''", "True", "False", "None", "true", "null", "NaN", "Infinity", "1e999", "-1e999", "1e5",
          "-0", "0.5", ".5", "1.", "007", "1_000", "0x10", "+1", "- 1", "1j", "b", "r", "u", "f", "{", "}", "[", "]",
          "(", ")", ":", ",", " ", "\t", "\n", "\r", "\x0c", "\x00", "#", "a", "é", "x", "__import__('os')", "{1, 2}",
          "(1,)", "{'k': 1}", "['v']", "'plain'", '"dq"', "'a\"b'", "\"a'b\""]


@settings(max_examples=4000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14))
def test_any_text_is_read_or_refused_as_literal_eval_decides(pieces: list[str]):
    same("".join(pieces).encode("utf-8", "surrogatepass"))


@settings(max_examples=1500, deadline=None)
@given(json_values, st.integers(min_value=0), st.sampled_from(PIECES))
def test_a_body_with_something_put_in_is_read_or_refused_as_literal_eval_decides(value: object, at: int,
                                                                                  piece: str):
    text = ascii(value)
    at %= len(text) + 1
    same((text[:at] + piece + text[at:]).encode("utf-8", "surrogatepass"))


def test_over_the_size_limit_is_refused():
    with pytest.raises(InvalidRequest, match="at most"):
        literal.read(b"[" + b"0," * wire.LITERAL_MAX + b"0]")


def test_deep_nesting_is_refused_not_a_crash():
    assert outcome(b"[" * 20000 + b"]" * 20000) == "refused"


@pytest.mark.parametrize("depth", [200, 201, 500, 990, 2000])
def test_nesting_python_s_parser_refuses_is_refused(depth: int):
    """Python's parser refuses brackets nested deeper than 200 where json's goes on."""
    same(b"[" * depth + b"]" * depth)
    same(b"{'a':" * depth + b"1" + b"}" * depth)


@pytest.mark.parametrize("body, why", [
    (b"'" + b"\\'" * 16383, "opens no string"), (b"\\'" * 16384, "opens no string"),
    (b'"' + b'\\"' * 16383, "opens no string"), (b"'\\\"" * 10922, "opens no string"),
    (b"\"\\'" * 10922, "opens no string"), (b"'\"\\'" * 8192, "many strings"),
    (b'"""\n' + b"\\'" * 16380 + b'\n"""', "opens no string"),
    (b"['''\n" + b"\\'" * 16379 + b"\n''']", "opens no string"),
    (b"['\\0'," + b"'\\0'," * 6552 + b"1,]", "many strings"),
])
def test_a_body_of_unclosed_or_escaped_quotes_goes_to_literal_eval_at_once(body: bytes, why: str):
    """A quote that opens no string of one line, or many strings only literal_eval reads, give the
    body to literal_eval as soon as the scan meets them (a scan that began again at each such quote
    took seconds for 32 KiB of them; literal_eval takes milliseconds)."""
    same(body)
    with pytest.raises(ValueError, match=why):
        literal._strings(body.decode("ascii"))
