"""The accounting database's associations and QOS in memory (`Tree`), as the admission policy
(admit.py), the limits and fair share read them. Pure data and lookups: the store builds a Tree from
its tables after every write (store/accounts.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Assoc:
    id: int
    account: str
    user: str
    partition: str
    shares: int
    priority: int | None
    qos: list[str] | None
    default_qos: str | None
    limits: dict[str, Any]


@dataclass
class Qos:
    id: int
    name: str
    description: str
    priority: int
    preempt: list[str]
    preempt_mode: str
    preempt_exempt_time: int | None
    grace_time: int
    flags: list[str]
    usage_factor: float
    limits: dict[str, Any]


@dataclass
class Tree:
    """Everything sacctmgr manages, in memory."""

    clusters: list[str] = field(default_factory=list)
    accounts: dict[str, Any] = field(default_factory=dict)
    users: dict[str, Any] = field(default_factory=dict)
    assocs: list[Assoc] = field(default_factory=list)
    qos: dict[str, Qos] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_key = {(a.account, a.user, a.partition): a for a in self.assocs}
        self.by_id = {a.id: a for a in self.assocs}

    def user_assoc(self, user: str, account: str, partition: str) -> Assoc | None:
        return self.by_key.get((account, user, partition)) or self.by_key.get((account, user, ""))

    def chain(self, a: Assoc) -> list[Assoc]:
        """The association, then its account's and every ancestor account's, up to root."""
        out = [a]
        acct = a.account if a.user else (self.accounts[a.account].parent if a.account in self.accounts else None)
        seen = set()
        while acct and acct not in seen:
            seen.add(acct)
            got = self.by_key.get((acct, "", ""))
            if got is not None:
                out.append(got)
            row = self.accounts.get(acct)
            acct = row.parent if row is not None else None
        return out

    def inherited(self, a: Assoc, key: str) -> Any:
        """An association limit as it applies: its own, else the nearest ancestor's."""
        for x in self.chain(a):
            if key in x.limits:
                return x.limits[key]
        return None

    def allowed_qos(self, a: Assoc) -> list[str]:
        for x in self.chain(a):
            if x.qos is not None:
                return x.qos
        return ["normal"] if "normal" in self.qos else []

    def default_qos(self, a: Assoc) -> str | None:
        for x in self.chain(a):
            if x.default_qos:
                return x.default_qos
        allowed = self.allowed_qos(a)
        if "normal" in allowed:
            return "normal"
        return allowed[0] if len(allowed) == 1 else None

    def user_accounts(self, user: str) -> list[str]:
        return sorted({a.account for a in self.assocs if a.user == user})
