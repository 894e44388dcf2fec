"""The fleet line writes its counts as the plane writes them: `10,000
agents · 1,200 working · 513 held`, not `10000 agents`, beside the plane's
own `10,000 agents` (its start line) and `plane status`."""

from decimal import Decimal

from tui.fleet import Fleet


def test_a_large_fleets_counts_are_written_with_thousands_separated():
    line = Fleet(agents=10_000, working=1_200, amber=0, held=513, spent=Decimal("1.5"))
    assert line.text() == "10,000 agents · 1,200 working · 513 held · $1.50 today"
