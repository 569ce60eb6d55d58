"""cli/slurm_json writes a document as 22.05's squeue, sinfo and sacct do: the reference's own output
(tests/data/slurm-2205-json.md, kept byte for byte) comes out again unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from slurmlet.cli.slurm_json import dumps

DATA = Path(__file__).parents[2] / "data" / "slurm-2205-json.md"


def test_sinfo_document_is_written_byte_for_byte():
    block = DATA.read_text().split("## sinfo --json", 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0]
    assert '"gres_drained": "N\\/A"' in block and '"state_flags": [\n      ],' in block
    assert dumps(json.loads(block)) == block


def test_empty_containers_and_slashes():
    assert dumps({"a": [], "b": {}, "c": ["x/y", 2.0, None, True]}) == \
        '{\n  "a": [\n  ],\n  "b": {\n  },\n  "c": [\n    "x\\/y",\n    2.0,\n    null,\n    true\n  ]\n}'
