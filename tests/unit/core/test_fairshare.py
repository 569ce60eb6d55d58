"""Fair-share over the association tree, checked against numbers a real Slurm 22.05 printed
(tests/data/slurm-2205-accounting.md, "Fair-share: sshare and sprio")."""

from __future__ import annotations

import pytest

from slurmlet.controller.core import fairshare as F

# the captured tree: root > {bio (1), chem (1), physics (40) > theory (20)}, with their users
ACCOUNTS = {"root": (None, 1), "bio": ("root", 1), "chem": ("root", 1), "physics": ("root", 40),
            "theory": ("physics", 20)}
USERS = [("root", "root", 1), ("bio", "eve", 1), ("chem", "bob", 1), ("chem", "dave", 1),
         ("physics", "alice", 1), ("physics", "bob", 1), ("theory", "carol", 1)]
USAGE = {("chem", "bob"): 471, ("chem", "dave"): 4, ("physics", "alice"): 1867, ("physics", "bob"): 173,
         ("theory", "carol"): 177}


def table(fair_tree: bool) -> dict[tuple[str, str], F.ShareNode]:
    root = F.compute(F.build_tree(ACCOUNTS, USERS, USAGE), fair_tree)
    return {(n.account, n.user): n for _, n in F.walk(root)}


def test_fair_tree_ranks_users_as_slurm_does():
    t = table(True)
    # `sshare -a` FairShare column of the capture: ties (root and eve, both unused) share a rank
    want = {("root", "root"): 1.0, ("bio", "eve"): 1.0, ("theory", "carol"): 0.714286,
            ("physics", "bob"): 0.571429, ("physics", "alice"): 0.428571, ("chem", "dave"): 0.285714,
            ("chem", "bob"): 0.142857}
    assert {k: round(t[k].fairshare, 6) for k in want} == want
    # NormShares are per level under Fair Tree; EffectvUsage is the part of the parent's usage
    assert round(t[("chem", "")].norm_shares, 6) == 0.023256 and round(t[("theory", "")].norm_shares, 6) == 0.909091
    assert round(t[("chem", "bob")].effective_usage, 4) == pytest.approx(0.9916, abs=1e-3)
    assert t[("bio", "")].level_fs == float("inf")
    assert round(t[("physics", "")].level_fs, 2) == 1.13


def test_walk_lists_users_before_sub_accounts():
    root = F.compute(F.build_tree(ACCOUNTS, USERS, USAGE))
    order = [(d, n.account, n.user) for d, n in F.walk(root)]
    assert order == [(0, "root", ""), (1, "root", "root"), (1, "bio", ""), (2, "bio", "eve"), (1, "chem", ""),
                     (2, "chem", "bob"), (2, "chem", "dave"), (1, "physics", ""), (2, "physics", "alice"),
                     (2, "physics", "bob"), (2, "theory", ""), (3, "theory", "carol")]


def test_classic_factor_is_two_to_the_minus_usage_over_shares():
    t = table(False)
    # NormShares multiply down the tree: theory = 40/43 * 20/22, carol = theory's
    assert round(t[("theory", "carol")].norm_shares, 6) == 0.845666
    assert round(t[("chem", "bob")].norm_shares, 6) == 0.011628
    assert t[("root", "")].fairshare == 0.5  # 2^(-1/1)
    for n in t.values():
        if n.norm_shares > 0:
            assert n.fairshare == pytest.approx(2.0 ** (-n.effective_usage / n.norm_shares))
    # the unused account beats the heavy one; within physics the light user beats the heavy one
    assert t[("bio", "eve")].fairshare == 1.0 > t[("chem", "bob")].fairshare
    assert t[("physics", "bob")].fairshare > t[("physics", "alice")].fairshare


def test_no_usage_at_all_gives_everyone_the_top_factor():
    root = F.compute(F.build_tree(ACCOUNTS, USERS, {}))
    assert {n.fairshare for _, n in F.walk(root) if n.user} == {1.0}
