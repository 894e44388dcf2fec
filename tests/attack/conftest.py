"""The attack suite: the real plane, attacked as it runs."""


def pytest_configure(config):  # type: ignore[no-untyped-def]
    config.addinivalue_line("markers", "slow: takes more than ~10 s; runs in `make test` too")
