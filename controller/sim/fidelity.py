"""A replay's starts against the starts its sacct history recorded: how closely the simulator
reproduces the real Slurm that ran the jobs.

Each replayed job carries its dump line (`SwfJob.line`); that record's `Start` and arrival
(`Eligible`, else `Submit`, as `sacct.py` reads them) give the job's recorded wait, and the replay
gives its simulated one. Both count from the same arrival, so `start_sim - start_slurm` is
`wait_sim - wait_slurm`. Figures (seconds; percentiles by nearest rank, as the report's):

* error: |start_sim - start_slurm| per job: median, p95, max, mean; and the signed mean (< 0: the
  replay starts jobs earlier than Slurm did);
* exact / within 1 s / within 60 s: the share of jobs whose error is 0, <= 1 s, <= 60 s;
* recorded and simulated waits: mean, and the error relative to them: sum of errors / sum of
  recorded waits, and the median of error / recorded wait over the jobs that waited (>= 1 s).
"""

from __future__ import annotations

from dataclasses import dataclass

from .engine import SimResult
from .report import percentile
from .sacct import SacctError, _stamp
from .swf import open_text


@dataclass(frozen=True, slots=True)
class Fidelity:
    jobs: int
    median_error_s: float
    p95_error_s: float
    max_error_s: float
    mean_error_s: float
    mean_signed_error_s: float
    exact: float
    within_1s: float
    within_60s: float
    mean_wait_slurm_s: float
    mean_wait_sim_s: float
    error_per_wait: float  #: sum of errors / sum of recorded waits
    median_error_per_wait: float  #: over the jobs that waited in Slurm

    def as_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def recorded_waits(path: str, lines: set[int]) -> dict[int, float]:
    """{dump line: Start - arrival} of the records at `lines` (arrival as `sacct.py` takes it)."""
    out: dict[int, float] = {}
    with open_text(path) as f:
        header: list[str] = []
        for n, line in enumerate(f, 1):
            if not header:
                if line.strip():
                    header = line.rstrip("\r\n").split("|")
                continue
            if n not in lines:
                continue
            row = dict(zip(header, line.rstrip("\r\n").split("|")))
            start, submit, eligible = _stamp(row["Start"]), _stamp(row["Submit"]), _stamp(row.get("Eligible", ""))
            if start is None or submit is None:
                raise SacctError(f"{path}:{n}: the record has no Start or Submit")
            arrive = eligible if eligible is not None and eligible <= start else submit
            out[n] = start - arrive
    return out


def compare(path: str, res: SimResult) -> Fidelity:
    """The figures of `res` (a replay of the dump at `path`) against the dump's own starts."""
    recorded = recorded_waits(path, {j.line for j in res.jobs})
    slurm = [recorded[j.line] for j in res.jobs]
    sim = [s - j.submit for j, s in zip(res.jobs, res.start)]
    signed = [b - a for a, b in zip(slurm, sim)]
    err = [abs(d) for d in signed]
    n = len(err)
    if not n:
        return Fidelity(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    waited = [e / w for e, w in zip(err, slurm) if w >= 1]
    return Fidelity(
        jobs=n, median_error_s=percentile(err, 50), p95_error_s=percentile(err, 95), max_error_s=max(err),
        mean_error_s=round(sum(err) / n, 3), mean_signed_error_s=round(sum(signed) / n, 3),
        exact=round(sum(e == 0 for e in err) / n, 4), within_1s=round(sum(e <= 1 for e in err) / n, 4),
        within_60s=round(sum(e <= 60 for e in err) / n, 4),
        mean_wait_slurm_s=round(sum(slurm) / n, 3), mean_wait_sim_s=round(sum(sim) / n, 3),
        error_per_wait=round(sum(err) / sum(slurm), 4) if sum(slurm) > 0 else 0.0,
        median_error_per_wait=round(percentile(waited, 50), 4))
