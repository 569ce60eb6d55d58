"""Job steps: srun inside an allocation creates one, cancels one, waits for one."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..errors import NotFound
from .deps import CtlDep, JobId, as_json, own_job
from .schemas import StepCreate

router = APIRouter()


@router.post("/api/v1/jobs/{job_id}/steps")
async def create_step(c: CtlDep, job_id: JobId, body: StepCreate, request: Request):  # noqa: ANN202
    """srun inside an allocation: a step on the job's nodes; their agents start its tasks."""
    own_job(c, request, job_id)
    got = c.store.create_step(job_id, body.model_dump(), c.clock())
    c.notify(x["node"] for x in got["layout"])
    return as_json(got)


@router.post("/api/v1/jobs/{job_id}/steps/{step_id}/cancel")
async def cancel_step(c: CtlDep, job_id: JobId, step_id: JobId, request: Request):  # noqa: ANN202
    own_job(c, request, job_id)
    c.notify(c.store.cancel_step(job_id, step_id, c.clock()))
    return {"ok": True}


@router.get("/api/v1/jobs/{job_id}/steps/{step_id}")
async def get_step(c: CtlDep, job_id: JobId, step_id: JobId):  # noqa: ANN202
    got = [s for s in c.store.step_rows([job_id], srun=True).get(job_id, []) if s["step"] == step_id]
    if not got:
        raise NotFound("Invalid job id specified")
    return as_json(got[0])
