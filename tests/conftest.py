"""Shared test fixtures: each module in tests/support registers its own."""

pytest_plugins: list[str] = []
