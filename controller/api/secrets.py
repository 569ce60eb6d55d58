"""Secrets for air runs (`slurmlet secrets`): stored by name, never returned."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..errors import InvalidRequest
from .deps import CtlDep, as_json, read_body

router = APIRouter()


@router.put("/api/v1/secrets/{scope}/{key}")
async def put_secret(c: CtlDep, scope: str, key: str, request: Request):  # noqa: ANN202
    """Store a secret for air runs; its value is never returned."""
    doc = await read_body(request)
    if not isinstance(doc, dict) or not isinstance(doc.get("value"), str):
        raise InvalidRequest("expected {\"value\": \"...\"}")
    c.store.put_secret(scope, key, doc["value"], c.clock())
    return {"ok": True}


@router.delete("/api/v1/secrets/{scope}/{key}")
async def delete_secret(c: CtlDep, scope: str, key: str, request: Request):  # noqa: ANN202
    c.store.delete_secret(scope, key)
    return {"ok": True}


@router.get("/api/v1/secrets")
async def list_secrets(c: CtlDep):  # noqa: ANN202
    """Names only."""
    return as_json({"secrets": c.store.secret_names()})
