"""Secrets for air runs (`slurmlet secrets`): stored by name, never returned, each with an owner.

A secret belongs to the user who stored it, or, stored with `?account=NAME` by a member of that
account, to the account (every member's runs may use it). Nobody else reads, replaces, deletes or
lists it; administrators list every secret's name and owner and may act for a user (`?user=NAME`).
Without a cluster key (an open controller) the request's `?user=` names the user, as everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter, Request

from .. import auth
from ..errors import InvalidRequest
from ..gate import GateRoute
from .deps import as_json, caller, ctl, json_body
from .schemas import MAX_TEXT, check_text

if TYPE_CHECKING:
    from ..runtime import Controller

router = APIRouter(route_class=GateRoute)


def _checked(**fields: str | None) -> None:
    """400 for a name or value no store or environment can hold (NUL, lone surrogate, over length;
    a scope or key with a slash or a space, as `slurmlet secrets` refuses them)."""
    for where, v in fields.items():
        if v is None:
            continue
        try:
            check_text(v, where, 128 if where != "value" else MAX_TEXT)
        except ValueError as e:
            raise InvalidRequest(str(e)) from None
        if where in ("scope", "key") and (not v or "/" in v or any(ch.isspace() for ch in v)):
            raise InvalidRequest(f"{where} {v!r}: no slashes or spaces")


def owner_of(c: Controller, request: Request, account: str | None, user: str | None) -> str:
    """The owner a request acts for: an account its caller belongs to, else its caller."""
    _checked(account=account, user=user)
    who = caller(request)
    if not who.known and who.level < 2:
        raise auth.Unauthenticated()
    if account:
        if who.level < 2 and account not in c.store.accounts.tree().user_accounts(who.user or ""):
            raise auth.Forbidden()
        return f"account:{account}"
    if who.known and not (who.level >= 2 and user):
        return f"user:{who.user}"
    return f"user:{user or 'root'}"


def visible_owners(c: Controller, request: Request) -> list[str] | None:
    """Whose secrets a caller may list: their own and their accounts'; an administrator's, all (None)."""
    who = caller(request)
    if who.level >= 2:
        return None
    if not who.known:
        raise auth.Unauthenticated()
    return [f"user:{who.user}"] + [f"account:{a}" for a in c.store.accounts.tree().user_accounts(who.user or "")]


@router.put("/api/v1/secrets/{scope}/{key}")
async def put_secret(scope: str, key: str, request: Request, account: str | None = None,
                     user: str | None = None):
    """Store a secret for air runs; its value is never returned."""
    c = ctl(request)
    doc = await json_body(request)
    if not isinstance(doc, dict) or not isinstance(doc.get("value"), str):
        raise InvalidRequest("expected {\"value\": \"...\"}")
    _checked(scope=scope, key=key, value=doc["value"])
    c.store.put_secret(owner_of(c, request, account, user), scope, key, doc["value"], c.clock())
    return {"ok": True}


@router.delete("/api/v1/secrets/{scope}/{key}")
async def delete_secret(scope: str, key: str, request: Request, account: str | None = None,
                        user: str | None = None):
    c = ctl(request)
    _checked(scope=scope, key=key)
    c.store.delete_secret(owner_of(c, request, account, user), scope, key)
    return {"ok": True}


@router.get("/api/v1/secrets")
async def list_secrets(request: Request):
    """Names (and owners) only, of the secrets the caller may use."""
    c = ctl(request)
    return as_json({"secrets": c.store.secret_names(visible_owners(c, request))})
