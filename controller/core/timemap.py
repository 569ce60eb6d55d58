"""Backfill's time-indexed availability map (Slurm's `node_space`).

The map is a list of slots `[times[k], times[k+1])`, the last one open-ended. Each slot holds
every available node's free capacity as `(cpus, memory, gpu_mask)`; nodes with free CPUs are in
`open`, the others in `shut` (they keep their memory and GPUs so that a later release adds to the
right amounts). Running jobs give their resources back at their end time; a reservation takes
resources away over `[start, end)`. Times are rounded up to `bf_resolution` past `now`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from itertools import accumulate

from .alloc import Free, fit
from .model import NodeAlloc, Request

Cap = tuple[int, int, int]  # free cpus, memory (MB), GPU index bit mask


def mask_of(ids: Iterable[int]) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


class _Grid:
    now: float
    res: int

    def grid(self, t: float) -> float:
        """`t` rounded up to the map's resolution; never `now` itself (resources held now stay held)."""
        if t <= self.now:
            return self.now + self.res
        steps = -(-(t - self.now) // self.res)
        return self.now + steps * self.res


class CountMap(_Grid):
    """The time map when nodes are interchangeable and jobs take whole nodes: free-node counts.

    Reservations need no node names then: jobs that hold whole, identical nodes over intervals
    fit on the nodes iff at no instant more of them run than there are nodes (interval graphs are
    perfect), so counts are exact.
    """

    def __init__(self, now: float, resolution: int, window_s: float, free_now: int,
                 releases: list[tuple[float, int]]):
        self.now = now
        self.res = res = max(1, resolution)
        self.horizon = horizon = now + window_s
        back: dict[float, int] = {}
        get = back.get
        for at, n in releases:
            if at <= horizon:
                t = now + res if at <= now else now + -(-(at - now) // res) * res  # self.grid(at), inline
                back[t] = get(t, 0) + n
        ts = sorted(back)
        self.times = [now, *ts]
        self.cnt = list(accumulate(map(back.__getitem__, ts), initial=free_now))  # running sums

    def _slot(self, t: float) -> int:
        i = bisect_left(self.times, t)
        if i < len(self.times) and self.times[i] == t:
            return i
        self.times.insert(i, t)
        self.cnt.insert(i, self.cnt[i - 1])
        return i

    def reserve(self, start: float, seconds: float | None, n: int) -> None:
        times, cnt = self.times, self.cnt
        i = bisect_left(times, start)  # self._slot(start), inline
        if i == len(times) or times[i] != start:
            times.insert(i, start)
            cnt.insert(i, cnt[i - 1])
        if seconds is None:
            j = len(times)
        else:
            t, now, res = start + seconds, self.now, self.res
            end = now + res if t <= now else now + -(-(t - now) // res) * res  # self.grid(t), inline
            if end > self.horizon:
                j = len(times)
            else:  # self._slot(end), inline
                j = bisect_left(times, end)
                if j == len(times) or times[j] != end:
                    times.insert(j, end)
                    cnt.insert(j, cnt[j - 1])
        cnt[i:j] = [c - n for c in cnt[i:j]]

    def earliest(self, n: int, seconds: float | None, only_now: bool = False) -> float | None:
        """The first slot start from which `n` nodes stay free for `seconds` (None: for ever)."""
        times, cnt = self.times, self.cnt
        size = len(times)
        horizon = self.horizon
        k = 0
        while k < size and times[k] <= horizon:
            if cnt[k] < n:
                if only_now:
                    return None
                k += 1
                continue
            m = k + 1
            if seconds is None:
                while m < size and cnt[m] >= n:
                    m += 1
                if m == size:
                    return times[k]
            else:
                end = times[k] + seconds
                while m < size and times[m] < end and cnt[m] >= n:
                    m += 1
                if m == size or times[m] >= end:  # the window ends before a slot without enough
                    return times[k]
            if only_now:
                return None
            k = m + 1
        return None


class TimeMap(_Grid):
    def __init__(self, now: float, resolution: int, window_s: float, free: dict[str, Free]):
        self.now = now
        self.res = max(1, resolution)
        self.horizon = now + window_s
        self.info = {n: (f.total_cpus, f.total_memory, (1 << f.total_gpus) - 1) for n, f in free.items()}
        self.gpu_type = {n: f.gpu_type for n, f in free.items()}
        slot_open = {n: (f.cpus, f.memory, mask_of(f.gpu_ids)) for n, f in free.items() if f.cpus > 0}
        slot_shut = {n: (0, f.memory, mask_of(f.gpu_ids)) for n, f in free.items() if f.cpus <= 0}
        self.times = [now]
        self.open = [slot_open]
        self.shut = [slot_shut]
        self.cpu_sum = [sum(c for c, _, _ in slot_open.values())]

    # ------------------------------------------------------------------ building
    def _slot(self, t: float) -> int:
        """Index of the slot starting at `t`, splitting the slot that contains it if needed."""
        i = bisect_left(self.times, t)
        if i < len(self.times) and self.times[i] == t:
            return i
        self.times.insert(i, t)
        self.open.insert(i, self.open[i - 1].copy())
        self.shut.insert(i, self.shut[i - 1].copy())
        self.cpu_sum.insert(i, self.cpu_sum[i - 1])
        return i

    def _change(self, k: int, node: str, cpus: int, mem: int, gmask: int, sign: int) -> None:
        op, sh = self.open[k], self.shut[k]
        cur = op.get(node) or sh.get(node)
        if cur is None:
            return
        c0, m0, g0 = cur
        if sign > 0:
            new = (c0 + cpus, m0 + mem, g0 | gmask)
        else:
            new = (c0 - cpus, m0 - mem, g0 & ~gmask)
        self.cpu_sum[k] += max(new[0], 0) - max(c0, 0)
        if new[0] > 0:
            sh.pop(node, None)
            op[node] = new
        else:
            op.pop(node, None)
            sh[node] = new

    def release(self, at: float, allocs: tuple[NodeAlloc, ...], memory: bool = True) -> None:
        """Resources of a running job come back at `at` (rounded) and stay free afterwards."""
        if at > self.horizon:
            return
        i = self._slot(self.grid(at))
        for a in allocs:
            if a.node not in self.info:
                continue
            g = mask_of(a.gpu_ids)
            for k in range(i, len(self.times)):
                self._change(k, a.node, a.cpus, a.memory if memory else 0, g, +1)

    def reserve(self, start: float, seconds: float | None, allocs: tuple[NodeAlloc, ...]) -> None:
        """Take `allocs` away over `[start, start + seconds)`; `None` seconds: for ever."""
        i = self._slot(start)
        end = None if seconds is None else self.grid(start + seconds)
        j = len(self.times) if end is None or end > self.horizon else self._slot(end)
        for a in allocs:
            g = mask_of(a.gpu_ids)
            for k in range(i, j):
                self._change(k, a.node, a.cpus, a.memory, g, -1)

    # ------------------------------------------------------------------ queries
    def earliest(self, req: Request, members: frozenset[str], rank: dict[str, int], seconds: float | None,
                 need_cpus: int, def_mem: int, only_now: bool = False) -> tuple[float, tuple[NodeAlloc, ...]] | None:
        """The first slot start at which `req` fits for `seconds`, with the nodes it would get.

        A start later than now prefers nodes that are busy now, leaving nodes free now to jobs
        that backfill before it.
        """
        times = self.times
        n = len(times)
        need_nodes = req.nodes_min
        for k in range(1 if only_now else n):
            t = times[k]
            if t > self.horizon:
                break
            if self.cpu_sum[k] < need_cpus:
                continue
            stop = n if seconds is None else bisect_left(times, t + seconds, k + 1)
            cur = {name: v for name, v in self.open[k].items() if name in members}
            for m in range(k + 1, stop):
                if len(cur) < need_nodes:
                    break
                nxt = self.open[m]
                low = {}
                for name, (c, mem, g) in cur.items():
                    w = nxt.get(name)
                    if w is not None:
                        low[name] = (c if c < w[0] else w[0], mem if mem < w[1] else w[1], g & w[2])
                cur = low
            if len(cur) < need_nodes or sum(c for c, _, _ in cur.values()) < need_cpus:
                continue
            if k == 0:
                order = sorted(cur, key=rank.__getitem__)
            else:
                now_open = self.open[0]
                order = sorted(cur, key=lambda x: (x in now_open, rank[x]))
            cands = []
            for name in order:
                c, mem, g = cur[name]
                tc, tm, tg = self.info[name]
                ids = [i for i in range(tg.bit_length()) if g >> i & 1]
                cands.append(Free(name, c, mem, ids, tc, tm, tg.bit_length(),
                                  c == tc and mem == tm and g == tg, 1, self.gpu_type[name]))
            allocs = fit(req, cands, def_mem)
            if allocs is not None:
                return t, allocs
        return None
