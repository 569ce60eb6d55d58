"""The agent's retry pauses: growing, capped, and spread so that agents do not retry in step."""

from __future__ import annotations

from nodeagent.agent import MAX_BACKOFF, jittered


def test_pauses_stay_within_half_and_one_and_a_half_of_the_backoff():
    for backoff in (0.1, 0.4, 1.6, MAX_BACKOFF):
        pauses = [jittered(backoff) for _ in range(200)]
        assert all(0.5 * backoff <= p < 1.5 * backoff for p in pauses)
        assert len(set(pauses)) > 150  # 100 agents restarted together do not call back in one instant
