"""The blocks of agents.yaml that make a model's input smaller: `session:`
(compacting old tool results, auto-compact), `repo_map:` and `compression:`."""

from __future__ import annotations

from pydantic import Field

from plane.config.values import Block

TEN_YEARS = 10 * 365 * 86_400


class SessionConfig(Block):
    compact_enabled: bool = False
    """Replace old, large tool results in the model's input by a short marker."""
    compact_keep_last_n_turns: int = Field(default=4, ge=0)
    """Never touch the most recent N turns."""
    compact_min_chars: int = Field(default=800, ge=0)
    """Only results longer than this are compacted."""
    compact_trigger_chars: int = Field(default=16_000, ge=0)
    """Compact in a batch once this much old tool output has piled up, so the
    provider's cache breaks rarely, not every turn."""
    auto_compact: bool = False
    """Summarise the whole history when the prompt nears the context window
    (the transcript is saved first)."""


class RepoMapConfig(Block):
    enabled: bool = False
    """Summarise files the agent reads into REPO_MAP.json and the prompt."""
    max_files: int = Field(default=100, gt=0)
    max_file_bytes: int = Field(default=200_000, gt=0)
    max_snapshot_chars: int = Field(default=2000, gt=0)


class CompressionConfig(Block):
    enabled: bool = True
    """Compress machine-generated tool output (never what people or models wrote)."""
    ttl_seconds: int = Field(default=3600, ge=3600, le=TEN_YEARS)
    """How long what compression removed stays retrievable (at least an hour,
    at most ten years: a longer one is no promise a clock can keep)."""
