"""The agent's retry pauses: growing, capped, and spread so that agents do not retry in step."""

from __future__ import annotations

from slurmlet.nodeagent.agent import MAX_BACKOFF, jittered, max_backoff


def test_pauses_stay_between_half_the_backoff_and_the_backoff():
    for backoff in (0.1, 0.4, 1.6, MAX_BACKOFF):
        pauses = [jittered(backoff) for _ in range(200)]
        assert all(0.5 * backoff <= p <= backoff for p in pauses)
        assert len(set(pauses)) > 150  # 100 agents restarted together do not call back in one instant


def test_an_agent_retries_well_within_slurmd_timeout():
    """A controller started again waits one SlurmdTimeout for its nodes: an agent's longest pause
    between attempts is a quarter of it (5 s at most)."""
    assert max_backoff(300) == MAX_BACKOFF == 5.0
    assert max_backoff(4) == 1.0
    assert max_backoff(None) == MAX_BACKOFF
