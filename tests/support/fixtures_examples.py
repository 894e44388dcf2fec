"""How many examples a property test tries: what it says it needs under
`make test`, a fifth of that in `make test-fast`, the inner loop.

A property test states its count as `examples(300)`. `make test-fast` runs
with Hypothesis's profile `fast` (`--hypothesis-profile fast`), which sets
the default of 100 to 20; `examples` scales each stated count by the same
ratio, so every property still runs, each on fewer cases, and `make test`
(the CI's run) tries every case it did. A failure Hypothesis finds is kept in
its database (`.hypothesis/`) and tried first by the next run of either tier.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("fast", max_examples=20)

FULL = 100
"""Hypothesis's default count, which the profile in force scales."""


def examples(stated: int) -> int:
    """`stated` examples, scaled as the profile in force scales the default."""
    return max(1, stated * settings().max_examples // FULL)  # settings(): the profile's
