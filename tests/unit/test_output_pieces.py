"""A job's output travels from its node in pieces (common/wire.PIECE): the agent reads at most a
piece whatever it is asked, and the sync that carries the answer accepts a whole piece of any bytes
(base64 in `answers`), where one character more is refused."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from slurmlet.common.wire import ANSWER_CHARS, PIECE
from slurmlet.controller.api.schemas import MAX_TEXT, NodeSync
from slurmlet.nodeagent.agent import read_tail


def _order(path: Path, offset: int, limit: int) -> dict:
    return {"op": "tail", "job_id": 1, "uid": os.getuid(), "gid": os.getgid(), "path": str(path),
            "offset": offset, "limit": limit, "key": "0123456789abcdef"}


def _sync(answer: dict) -> NodeSync:
    """The answer as the agent's sync carries it: JSON, read by the sync route's model."""
    return NodeSync.model_validate_json(json.dumps({"answers": [answer]}))


def test_the_agent_reads_a_piece_at_most_and_its_sync_takes_it(tmp_path: Path):
    out = tmp_path / "slurm-1.out"
    data = os.urandom(PIECE) + b"\xff" * (3 * PIECE)  # any bytes; PIECE is no multiple of 3 (padding)
    out.write_bytes(data)
    for offset in (0, -1, PIECE // 2):
        got = read_tail(_order(out, offset, 10 * PIECE))
        start = len(data) - PIECE if offset < 0 else offset
        assert (got["offset"], got["size"], base64.b64decode(got["data"])) == (start, len(data),
                                                                                data[start:start + PIECE])
        assert len(got["data"]) == ANSWER_CHARS > MAX_TEXT
        sync = _sync(dict(got, key="0123456789abcdef"))
        assert base64.b64decode(sync.answers[0]["data"]) == data[start:start + PIECE]


def test_an_answer_longer_than_a_piece_is_refused():
    with pytest.raises(ValidationError, match="answers: longer than"):
        _sync({"key": "0123456789abcdef", "offset": 0, "size": PIECE + 1, "data": "A" * (ANSWER_CHARS + 1)})


def test_an_error_naming_the_longest_path_fits():
    # (the path is the job's --output, a string of at most MAX_TEXT characters)
    error = "/" + "a" * (MAX_TEXT - 1) + ": Permission denied"
    assert _sync({"key": "0123456789abcdef", "error": error}).answers[0]["error"] == error
