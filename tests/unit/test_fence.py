"""The fence's timing (nodeagent/fence.py): the jobs of a dead agent end well within SlurmdTimeout."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slurmlet.nodeagent.fence import fence_after


@given(timeout=st.floats(min_value=4, max_value=3600), kill_wait=st.floats(min_value=0, max_value=120))
def test_the_fence_acts_within_a_quarter_of_slurmd_timeout_or_at_once(timeout: float, kill_wait: float):
    after = fence_after(timeout, kill_wait)
    assert 0.2 <= after <= 5.0
    assert after + kill_wait <= timeout / 4 or after == 0.2


def test_slurms_default_timeout_when_unset():
    assert fence_after(None, 30) == fence_after(300, 30) == 5.0
