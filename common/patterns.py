"""Output and error file names: Slurm's defaults (`slurm-%j.out`, `slurm-%A_%a.out`) and its
filename patterns (`%j %x %A %a %N %u %s %t %n %%`, zero-padded widths), expanded as slurmd does."""

from __future__ import annotations

from .grammar import BATCH_STEP_ID, NO_VAL, isdig


# ====================================================================== output files
def default_output(is_array: bool) -> str:
    """sbatch's default stdout pattern (stderr goes to the same file unless -e is given)."""
    return "slurm-%A_%a.out" if is_array else "slurm-%j.out"


def expand_pattern(pattern: str, *, job_id: int, array_job_id: int | None = None,
                   array_task_id: int | None = None, name: str = "", node: str = "", user: str = "",
                   step_id: int | None = None, task_id: int | None = None, node_index: int | None = None,
                   workdir: str | None = None) -> str:
    """slurmstepd's fname_create(): expand `%j %J %x %A %a %N %u %s %t %n %%`.

    A width between `%` and the letter zero-pads numbers (`%4j` -> `0042`, at most 10).
    `%A` is the array master id (the job id for a non-array job), `%a` the task index
    (4294967294 for a non-array job), `%s` the step id (4294967291 for the batch step, the
    default), `%J` `jobid.stepid`, `%t`/`%n` the task rank and node index (0 by default).
    An unknown letter stays as written (`%q`; `%4q` -> `4q`, as Slurm does).  A pattern
    with a backslash is not expanded; its backslashes are removed.  With `workdir`, a
    relative result is joined to it.
    """
    if "\\" in pattern:
        out = _remove_slashes(pattern)
    else:
        step = BATCH_STEP_ID if step_id is None else step_id
        nums = {
            "j": job_id, "a": NO_VAL if array_task_id is None else array_task_id,
            "A": job_id if array_task_id is None or array_job_id is None else array_job_id,
            "s": step, "t": task_id or 0, "n": node_index or 0,
        }
        strs = {"N": node, "u": user, "x": name}
        res: list[str] = []
        p, q, n = 0, 0, len(pattern)
        while p < n:
            if pattern[p] != "%":
                p += 1
                continue
            if p + 1 < n and pattern[p + 1] == "%":
                res.append(pattern[q:p + 1])
                p += 2
                q = p
                continue
            start = p
            p += 1
            wid = 0
            if p < n and isdig(pattern[p]):
                res.append(pattern[q:start])
                e = p
                while e < n and isdig(pattern[e]):
                    e += 1
                wid = min(int(pattern[p:e]), 10)
                p = e
                q = p - 1
                start = q
                if p >= n:
                    break
            c = pattern[p] if p < n else ""
            if c in nums or c in strs or c == "J":
                res.append(pattern[q:start])
                if c in nums:
                    res.append(str(nums[c]).zfill(wid))
                elif c in strs:
                    res.append(str(strs[c]))
                else:
                    res.append(str(job_id).zfill(wid) + f".{step}")
                p += 1
                q = p
        res.append(pattern[q:])
        out = "".join(res)
    if workdir and not out.startswith("/"):
        out = workdir.rstrip("/") + "/" + out
    return out


def _remove_slashes(p: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(p):
        if p[i] == "\\":
            if i + 1 < len(p) and p[i + 1] == "\\":
                out.append("\\")
                i += 2
                continue
            i += 1
            continue
        out.append(p[i])
        i += 1
    return "".join(out)
