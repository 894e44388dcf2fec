"""Rows no plane writes (a store edited by hand, or by a buggy older tool)
that a reader leaves aside rather than failing every read they are in: each
is said in plane.log once, by table and row, and stays in the store."""

from __future__ import annotations

import logging

log = logging.getLogger("plane.store")


class LeftAside:
    """The rows of one table a reader could not read, each said once."""

    def __init__(self, table: str) -> None:
        self._table = table
        self._said: set[object] = set()

    def __call__(self, row: object, owner: str, error: Exception) -> None:
        if row not in self._said:
            self._said.add(row)
            log.error(
                "%s row %s of %s cannot be read (%s); it is left aside",
                self._table, row, owner, error,
            )  # fmt: skip
