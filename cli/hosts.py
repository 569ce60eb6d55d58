"""Host lists for the CLI: python-hostlist's forms of node names, imported when needed."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


def compress_hostlist(names: Iterable[str]) -> str:
    """``node1,node2,node3,node7`` -> ``node[1-3,7]`` (python-hostlist, imported lazily)."""
    names = [n for n in names if n]
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    import hostlist  # ~2 ms, only needed when the API did not give a compressed list

    return hostlist.collect_hostlist(names)


def expand_hostlist(expr: str) -> list[str]:
    """``node[1-3]`` -> ``['node1', 'node2', 'node3']``."""
    if not expr:
        return []
    if "[" not in expr and "," not in expr:
        return [expr]
    import hostlist

    return hostlist.expand_hostlist(expr)
