"""The pending jobs of a multifactor policy in the order of their priority before the core
truncates it to an integer (`Ranking`): what lets the simulator hand a pass only the head of the
queue (see engine.py). Standard library only: setup.py compiles it beside the core for the
simulator's compiled core (controller/sim/native).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort


class Ranking:
    """The pending jobs of a multifactor policy in the order of their priority before the core
    truncates it to an integer, so that a pass can be handed only the head of the core's queue.

    The core's priority of job k at time t is max(1, int(v_k(t))) with
    v_k(t) = F_k + A * min((t - e_k) / MA, 1): F_k its parts but age (site and nice included),
    A = PriorityWeightAge, MA = PriorityMaxAge, e_k its eligible time (here its submit time).
    Until it saturates, v_k(t) = c_k + A t / MA with c_k = F_k - A e_k / MA: the order of those
    jobs by c_k never changes; afterwards v_k = F_k + A, constant. So two sorted lists, of
    (-c_k, k) and of (-(F_k + A), k); a job moves from the first to the second once
    t - e_k >= MA, in queue order, as e_k grows with the queue position k.
    """

    #: v is computed here as c_k + A t / MA, the core computes F_k + A (t - e_k) / MA: they differ
    #: by rounding (about 1e-11 at these magnitudes), far less than this margin
    EPS = 1e-6

    def __init__(self, fixed: list[float], eligible: list[float | None], age: float, max_age: float):
        self.aging = bool(age) and max_age > 0
        self.slope = age / max_age if self.aging else 0.0
        self.key: list[float] = []
        self.sat_key: list[float] = []
        for f, e in zip(fixed, eligible):
            if self.aging and e is not None:
                self.key.append(-(f - self.slope * e))
                self.sat_key.append(-(f + age))
            else:
                self.key.append(-f)
                self.sat_key.append(-f)
        self.aged = [self.aging and e is not None for e in eligible]
        self.eligible = eligible
        self.max_age = max_age
        self.uns: list[tuple[float, int]] = []  #: (-c_k, k), not saturated
        self.sat: list[tuple[float, int]] = []  #: (-v_k, k), saturated (or not aging)
        self.where = [0] * len(fixed)  #: 1: in `uns`, 2: in `sat`
        self.next_sat = 0  #: queue position from which jobs may still be unsaturated
        self.more: tuple[float, int, int] | None = None  #: see `head`

    def add(self, k: int) -> None:
        if self.aged[k]:
            insort(self.uns, (self.key[k], k))
            self.where[k] = 1
        else:
            insort(self.sat, (self.sat_key[k], k))
            self.where[k] = 2

    def remove(self, k: int) -> None:
        w = self.where[k]
        xs, key = (self.uns, (self.key[k], k)) if w == 1 else (self.sat, (self.sat_key[k], k))
        del xs[bisect_left(xs, key)]
        self.where[k] = 0

    def advance(self, t: float, arrived: int) -> None:
        """Move the jobs whose age factor is 1 at `t` to the saturated list."""
        k, el, ma = self.next_sat, self.eligible, self.max_age
        while k < arrived and ((e := el[k]) is None or not self.aged[k] or t - e >= ma):  # (aged: e is not None)
            if self.where[k] == 1:
                self.remove(k)
                insort(self.sat, (self.sat_key[k], k))
                self.where[k] = 2
            k += 1
        self.next_sat = k

    def _at_least(self, t: float, v: float) -> int:
        """How many pending jobs have v_k(t) >= v (as computed here)."""
        inf = math.inf
        return bisect_right(self.uns, (self.slope * t - v, inf)) + bisect_right(self.sat, (-v, inf))

    def head(self, t: float, size: list[int], free: int, window: int, fitting: int) -> list[int] | None:
        """Queue positions of a head of the core's queue order that holds every job that can start
        in this pass, or None when it would be (about) the whole queue.

        It walks the jobs by v as if the core ordered them so: the main pass starts a prefix and
        stops at the first job that does not fit (the blocker), backfill then tests `window`
        jobs from the blocker on, and only jobs no wider than the free processors can start. The
        head goes down to the last job that can matter, then to the whole integer priority of
        that job: the jobs with v >= N for an integer N >= 2 with no v within EPS of N. Every
        job in it then has a priority >= N and every other job one <= N - 1, so it is exactly the
        first jobs of the core's order, whatever the ties; whether it reaches far enough (the
        walk was only approximate) is checked after the pass (`Engine.run`).

        When the walk stopped at the end of backfill's window (fitting jobs come after it), it
        also leaves in `self.more` the integer N2 < N of a longer such head that holds the whole
        window as walked (`beyond` gives the jobs in it but not in the head), or None."""
        self.more = None
        uns, sat = self.uns, self.sat
        nu, ns = len(uns), len(sat)
        at = self.slope * t
        iu = js = pos = seen = 0
        room, block, need, end = free, -1, None, None
        while iu < nu or js < ns:
            if js >= ns or (iu < nu and at - uns[iu][0] >= -sat[js][0]):
                neg, k = uns[iu]
                v = at - neg
                iu += 1
            else:
                neg, k = sat[js]
                v = -neg
                js += 1
            z = size[k]
            if block < 0:
                if z <= room:  # the main pass starts it
                    room -= z
                    seen += 1
                    need = v
                    pos += 1
                    continue
                block = pos
                need = v
            elif pos >= block + window:
                end = v  # the first job after the window
                break
            if z <= free:
                seen += 1
                need = v
                if seen >= fitting:
                    break
            pos += 1
        if block < 0 or need is None:
            return None
        n = math.floor(need)
        while n >= 2 and self._at_least(t, n - self.EPS) != self._at_least(t, n + self.EPS):
            n -= 1  # a job within EPS of n: its integer priority is unsure here
        if n < 2:
            return None
        inf = math.inf
        cu = bisect_right(uns, (at - n, inf))
        cs = bisect_right(sat, (-n, inf))
        if cu + cs > (nu + ns) * 3 // 4:
            return None
        if end is not None:
            m = min(math.floor(end), n - 1)
            while m >= 2 and self._at_least(t, m - self.EPS) != self._at_least(t, m + self.EPS):
                m -= 1
            self.more = (t, n, m) if m >= 2 else None
        return [k for _, k in uns[:cu]] + [k for _, k in sat[:cs]]

    def beyond(self, submit: list[float]) -> list[int] | None:
        """The jobs with N2 <= v < N (see `head`), right after the head in the core's order, in
        that order: by integer priority (none is within EPS of an integer, so each one's is
        int(v)), then submit time, then queue position (the core's job id); None when some
        job's integer priority is unsure (or `head` left no longer head)."""
        if self.more is None:
            return None
        t, n, m = self.more
        at, inf = self.slope * t, math.inf
        lo_u, hi_u = bisect_right(self.uns, (at - n, inf)), bisect_right(self.uns, (at - m, inf))
        lo_s, hi_s = bisect_right(self.sat, (-n, inf)), bisect_right(self.sat, (-m, inf))
        rows = [(at - neg, k) for neg, k in self.uns[lo_u:hi_u]] + [(-neg, k) for neg, k in self.sat[lo_s:hi_s]]
        keyed = []
        for v, k in rows:
            p = math.floor(v)
            if v - p < self.EPS or p + 1 - v < self.EPS:
                return None
            keyed.append((-p, submit[k], k))
        keyed.sort()
        return [k for _, _, k in keyed]
