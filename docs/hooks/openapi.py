"""MkDocs hook: the REST API page's list of operations, and `openapi.json` beside it, made at build
time from the controller's own FastAPI app (no server started, no database opened), so the site
shows the API the code serves. api.md marks where the table goes with `<!-- openapi: operations -->`."""

from __future__ import annotations

import json
from typing import Any

from mkdocs.structure.files import File, Files

MARK = "<!-- openapi: operations -->"
_doc: dict[str, Any] | None = None


def document() -> dict[str, Any]:
    global _doc
    if _doc is None:
        from slurmlet.controller.app import create_app
        from slurmlet.controller.config import parse_slurm_conf
        from slurmlet.controller.runtime import Settings

        _doc = create_app(Settings(db_url="sqlite://", config=parse_slurm_conf(""))).openapi()
    return _doc


def operations_table(doc: dict[str, Any]) -> str:
    rows = ["| method | path | what it does |", "|---|---|---|"]
    for path, item in doc["paths"].items():
        for method, op in item.items():
            text = (op.get("summary") or "").replace("|", "\\|")
            rows.append(f"| `{method.upper()}` | `{path}` | {text} |")
    return "\n".join(rows)


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "openapi.json", content=json.dumps(document(), indent=1)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if MARK in markdown:
        markdown = markdown.replace(MARK, operations_table(document()))
    return markdown
