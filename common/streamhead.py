"""The line before each stream an agent opens to an srun (or sattach): which task, which stream,
and for `exit` its exit code, signal and node.

Agents write it as JSON, or, where the step's srun asked for them (`io_header: "words"` in its
step request), as words `KEY=VALUE` apart by spaces (`rank=0 stream=exit code=1 signal=0
node=node1`): an srun then reads its tasks' streams without loading `json` and the `re` that `json`
loads, milliseconds of every srun and on its way from submission to its tasks' start. A header whose
values do not all fit that form (a node name with a space) is written as JSON all the same: `read`
takes either. Anyone may connect to an srun's port, so `read` takes any line: what is not a header
is an empty one.
"""

from __future__ import annotations

TYPE_CHECKING = False  # keep typing out of srun's import path
if TYPE_CHECKING:
    from typing import Any

WORDS = "words"  #: StepCreate.io_header: the words form, please


def _number(v: str) -> bool:
    """Whether a word's value is a number: an optional '-' and 1 to 18 ASCII digits."""
    digits = v[1:] if v.startswith("-") else v
    return 0 < len(digits) <= 18 and digits.isascii() and digits.isdigit()


def _plain(v: object) -> bool:
    """A value the words form holds as it is: a number, or a word of printable ASCII with no '=' or
    space that does not read as a number."""
    if isinstance(v, (bool, int)):
        return -10**18 < v < 10**18
    return isinstance(v, str) and v != "" and v.isascii() and v.isprintable() and " " not in v and "=" not in v \
        and not _number(v) and v[0] != "{"


def write(header: dict[str, Any], words: bool) -> bytes:
    """The header line: in the words form where `words` and every value fits it, else JSON."""
    if words and all(isinstance(k, str) and _plain(k) and _plain(v) for k, v in header.items()):
        return " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in header.items()).encode() + b"\n"
    import json
    return json.dumps(header).encode() + b"\n"


def read(line: bytes) -> dict[str, Any]:
    """A header line as a dict (numbers as ints); {} for what is neither form."""
    text = line.decode("utf-8", "replace").strip()
    if text.startswith("{"):  # JSON: an agent that writes no words, or a value that did not fit them
        import json
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return {}
        return parsed if isinstance(parsed, dict) else {}
    head: dict[str, Any] = {}
    for word in text.split():
        k, eq, v = word.partition("=")
        if not eq:
            return {}
        head[k] = int(v) if _number(v) else v
    return head
