"""Reading ``sessions.usage`` answers (the runtime's shape, aggregates.byModel)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from occ.drivers.compute.gateway_usage import UNKNOWN, UsageShapeError, model_days, usage_params

DAY = date(2026, 12, 7)


def entry(provider, model, tokens_in, cost):
    return {"provider": provider, "model": model, "count": 2,
            "totals": {"input": tokens_in, "output": 1, "cacheRead": 2, "cacheWrite": 3, "totalTokens": 0,
                       "totalCost": cost, "missingCostEntries": 0}}


def test_one_day_every_agent_one_session_row():
    assert usage_params(DAY) == {"startDate": "2026-12-07", "endDate": "2026-12-07", "mode": "utc",
                                 "agentScope": "all", "limit": 1}


def test_each_model_once_with_its_tokens_and_cost_and_no_names_become_unknown():
    days = model_days(DAY, {"aggregates": {"byModel": [
        entry("openai", "gpt-5", 10, 0.5), entry("openai", "gpt-5", 5, 0.25), entry(None, None, 1, 0)]},
        "sessions": [], "totals": {}})
    by_model = {(d.provider, d.model): d for d in days}
    assert by_model[("openai", "gpt-5")].input_tokens == 15
    assert by_model[("openai", "gpt-5")].cost == Decimal("0.75")
    assert by_model[("openai", "gpt-5")].cache_write_tokens == 6
    assert (UNKNOWN, UNKNOWN) in by_model


def test_a_day_without_usage_is_empty():
    assert model_days(DAY, {"aggregates": {"byModel": []}}) == []
    assert model_days(DAY, {}) == []


@pytest.mark.parametrize("payload", [
    pytest.param([], id="a-list"),
    pytest.param({"aggregates": {"byModel": [{"totals": {"input": -1}}]}}, id="negative-tokens"),
    pytest.param({"aggregates": {"byModel": "many"}}, id="not-a-list"),
])
def test_a_shape_the_runtime_does_not_send_is_refused(payload):
    with pytest.raises(UsageShapeError):
        model_days(DAY, payload)
