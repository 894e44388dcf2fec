"""`plane status`'s first line on a plane of a fleet: the fleet's spend is
read from the shared store as it is now, the rows of the agents other planes
run as of this plane's last renewal. What those agents spent since is not
spend of agents deleted today (none were), and the line does not say so."""

from plane.cli.status import status_text

SNAPSHOT = {
    "day": "2026-11-29",
    "now": "2026-11-29T12:00:00+00:00",
    "resets_at": "2026-11-30T00:00:00+00:00",
    "agents": [
        {"name": "a1", "model": "m", "status": "idle", "spend_today_usd": "0.40"},
        {"name": "a2", "model": "m", "status": "idle", "spend_today_usd": "0.48"},
    ],
}


def test_calls_another_plane_made_since_its_renewal_are_not_said_as_deleted_agents():
    fleet = {
        **SNAPSHOT,
        "spend_today_usd": "0.88",  # the plane's sum of every agent's day, read with the rows
        "fleet_spend_today_usd": "0.94",  # the store's, now
        "fleet_limit_usd": "1",
    }
    assert status_text(fleet).splitlines()[0] == (
        "2026-11-29 (UTC): $0.94 of the fleet's $1.00 spent today"
    )


def test_an_agent_deleted_today_is_still_said_on_a_plane_of_a_fleet():
    fleet = {
        **SNAPSHOT,
        "spend_today_usd": "0.93",  # a deleted agent's $0.05 among them
        "fleet_spend_today_usd": "0.94",
        "fleet_limit_usd": "1",
    }
    assert status_text(fleet).splitlines()[0] == (
        "2026-11-29 (UTC): $0.94 of the fleet's $1.00 spent today"
        " ($0.05 of it by agents deleted today)"
    )


def test_a_store_gone_away_is_said_with_the_moment_it_went():
    """DESIGN.md: `plane status` says the store is unreachable since …, and
    that sends are refused meanwhile (nothing acked and lost)."""
    away = {
        **SNAPSHOT,
        "spend_today_usd": "0.88",
        "store_unreachable_since": "2026-11-29T10:04:05Z",
    }
    assert status_text(away).splitlines()[1] == (
        "The store is unreachable since 10:04:05 UTC: spend as last read; "
        "sends are refused until it is back."
    )
