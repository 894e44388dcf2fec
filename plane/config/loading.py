"""Reading agents.yaml: `load_config()`, the one reader of the file, and
`parse_config()` for text. Either gives a `Config` that makes sense whole,
or raises one `ConfigError` naming the file, the line, the key and what is
wrong."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from plane import collector
from plane.config.coherence import incoherence
from plane.config.file import Config
from plane.errors import ConfigError
from plane.yaml_reader import Plain, as_text, document, locate, read_file


def load_config(path: Path | None, looked: Sequence[Path] = ()) -> Config:
    """Read and validate agents.yaml; `None` gives the built-in defaults
    (the embedded model, no ceiling), which remember where a file was
    `looked` for. A file with nothing in it is refused: it would run every
    agent with no ceiling, which is not what its author meant, and nothing
    would say so."""
    if path is None:
        defaults = Config()
        defaults.keep_looked(tuple(place.absolute() for place in looked))
        return defaults
    config = _loaded(path)
    config.keep_file(path.resolve())
    return config


def _loaded(path: Path) -> Config:
    source = str(path)
    with collector.paused():  # what it builds is kept: nothing for the collector
        text = as_text(read_file(path), source)
        data = document(text, source)
        if data is None:
            raise ConfigError(
                f"{source}: the file is empty (no settings, only blank lines or comments), "
                "so it would set no ceiling; write the settings in it, or remove it to run "
                "on the built-in defaults."
            )
        return _validated(data, source, len(text))


def parse_config(text: str, source: str = "agents.yaml") -> Config:
    """A config from YAML text; empty text is the built-in defaults."""
    data = document(text, source)
    return _validated({} if data is None else data, source, len(text))


def _validated(data: Any, source: str, characters: int) -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys.")
    try:
        config = Config.model_validate(Plain(data, source, characters).value(data))
    except ValidationError as exc:
        raise ConfigError(_explain(exc, data, source)) from None
    if problem := incoherence(config):
        loc, message = problem
        raise ConfigError(locate(data, loc, source, message))
    config.keep_tree(data, source)
    return config


def _explain(exc: ValidationError, data: Any, source: str) -> str:
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return locate(data, [str(p) for p in error["loc"]], source, message)
