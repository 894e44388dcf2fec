"""A cause's rows in `alerts_told` are its own: a group named as the fleet's
or the day's rows are (`fleet`, `day`) is claimed apart from them, so its
hold never takes, nor is kept untold by, the fleet's or the day's claim."""

from __future__ import annotations

from plane.daemon.alert_claims import agent_key, cause_key
from plane.daemon.alert_folds import Cause


def test_a_group_named_fleet_or_day_has_rows_of_its_own():
    causes = [
        Cause("fleet"),
        Cause("day"),
        Cause("group", "fleet"),
        Cause("group", "day"),
        Cause("group", "agent"),
        Cause("fleet", model="day"),
        Cause("group", "fleet", "day"),
    ]
    keys = [cause_key(cause) for cause in causes] + [agent_key("held"), agent_key("amber")]
    assert len(set(keys)) == len(keys)
