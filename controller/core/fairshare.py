"""Fair-share over the association tree: Slurm's classic factor and Fair Tree, as pure functions.

The tree: accounts under `root`, users as leaves of the accounts they belong to. Each node has raw
shares (sacctmgr Fairshare=) and raw usage (decayed, billing-weighted TRES-seconds; an account's
usage is the sum of its children's).

* **Classic** (PriorityFlags=NO_FAIR_TREE): NormShares is the node's part of its siblings'
  shares times its parent's NormShares; EffectvUsage = NormUsage + (parent's EffectvUsage -
  NormUsage) * shares / siblings' shares, except right under root where it is NormUsage (both as
  a real slurmctld 22.05 prints them); the factor is 2^(-EffectvUsage / NormShares).
* **Fair Tree** (the default since Slurm 19.05): at each level LevelFS = S / U (the node's part of
  its siblings' shares over its part of their usage); a depth-first walk visits siblings by LevelFS,
  highest first, which ranks every user; the factor is rank / number of users (the first user 1.0),
  users tied all along the way sharing a rank.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class ShareNode:
    """One association in the tree: an account (user '') or a user in an account."""

    account: str
    user: str = ""
    shares: int = 1
    raw_usage: float = 0.0
    children: list[ShareNode] = field(default_factory=list)
    # results
    norm_shares: float = 0.0
    norm_usage: float = 0.0
    effective_usage: float = 0.0
    level_fs: float = 0.0
    fairshare: float = 0.0

    @property
    def is_user(self) -> bool:
        return bool(self.user)


def build_tree(accounts: dict[str, tuple[str | None, int]], users: list[tuple[str, str, int]],
               usage: dict[tuple[str, str], float]) -> ShareNode:
    """`accounts`: name -> (parent, shares); `users`: (account, user, shares);
    `usage`: (account, user) -> raw usage. Returns the root, with every account's usage summed."""
    nodes = {name: ShareNode(name, "", shares) for name, (_, shares) in accounts.items()}
    root = nodes.get("root") or ShareNode("root")
    nodes["root"] = root
    for name, (parent, _) in sorted(accounts.items()):
        if name != "root":
            nodes.get(parent or "root", root).children.append(nodes[name])
    for account, user, shares in sorted(users):
        if account in nodes:
            nodes[account].children.append(ShareNode(account, user, shares, usage.get((account, user), 0.0)))
    _sum_usage(root)
    return root


def _sum_usage(n: ShareNode) -> float:
    if n.children:
        n.raw_usage = sum(_sum_usage(c) for c in n.children)
    return n.raw_usage


def compute(root: ShareNode, fair_tree: bool = True) -> ShareNode:
    """Fill in every node's NormShares, NormUsage, EffectvUsage, LevelFS and FairShare."""
    total = root.raw_usage
    root.norm_shares = 1.0
    root.norm_usage = 1.0 if total > 0 else 0.0
    root.effective_usage = root.norm_usage
    if not fair_tree:
        root.fairshare = 2.0 ** -root.effective_usage
    _classic(root, total, fair_tree, root)
    if fair_tree:
        _rank(root)
    return root


def _classic(parent: ShareNode, total: float, fair_tree: bool, top: ShareNode | None = None) -> None:
    level_shares = sum(c.shares for c in parent.children)
    level_usage = sum(c.raw_usage for c in parent.children)
    for c in parent.children:
        s = c.shares / level_shares if level_shares else 0.0
        # Fair Tree's NormShares is the part of its siblings' shares; the classic one, of the whole tree
        c.norm_shares = s if fair_tree else s * parent.norm_shares
        c.norm_usage = c.raw_usage / total if total > 0 else 0.0
        if fair_tree:
            c.effective_usage = c.raw_usage / level_usage if level_usage > 0 else 0.0
            c.level_fs = s / c.effective_usage if c.effective_usage > 0 else math.inf
            if s == 0:
                c.level_fs = 0.0
        else:
            if parent is top:  # root's children: their own usage (as a real slurmctld 22.05 computes it)
                c.effective_usage = c.norm_usage
            else:
                c.effective_usage = c.norm_usage + (parent.effective_usage - c.norm_usage) * s
            c.fairshare = 2.0 ** (-c.effective_usage / c.norm_shares) if c.norm_shares > 0 else 0.0
        _classic(c, total, fair_tree, top or parent)


def _rank(root: ShareNode) -> None:
    """Fair Tree: rank users by a depth-first walk, siblings by LevelFS (highest first). Siblings
    tied on LevelFS are merged: tied users, and the children of tied accounts, are ranked together
    as one level (so a user tied with an account's user shares its rank)."""
    ordered: list[list[ShareNode]] = []  # groups of tied users, best first

    def walk(siblings: list[ShareNode]) -> None:
        kids = sorted(siblings, key=lambda c: -c.level_fs)
        i = 0
        while i < len(kids):
            j = i
            while j + 1 < len(kids) and kids[j + 1].level_fs == kids[i].level_fs:
                j += 1
            tied = kids[i:j + 1]
            accounts = [c for c in tied if not c.is_user]
            if accounts:
                walk([c for c in tied if c.is_user] + [g for a in accounts for g in a.children])
            else:
                ordered.append(tied)
            i = j + 1

    walk(root.children)
    n_users = sum(len(g) for g in ordered)
    rank = n_users
    for group in ordered:
        for u in group:
            u.fairshare = rank / n_users if n_users else 0.0
        rank -= len(group)


def walk(root: ShareNode) -> Iterator[tuple[int, ShareNode]]:
    """Depth-first, accounts before their users, as sshare lists the tree (by name within a level)."""
    def rec(n: ShareNode, depth: int) -> Iterator[tuple[int, ShareNode]]:
        yield depth, n
        kids = sorted(n.children, key=lambda c: (c.is_user is False, c.user or c.account))
        for c in kids:
            yield from rec(c, depth + 1)
    yield from rec(root, 0)


def factors(root: ShareNode) -> dict[tuple[str, str], tuple[float, float]]:
    """(account, user) -> (fair-share factor, NormShares) for every user association."""
    return {(n.account, n.user): (n.fairshare, n.norm_shares) for _, n in walk(root) if n.is_user}
