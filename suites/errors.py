"""Errors that end a run with one clear line instead of a traceback."""

from __future__ import annotations


class BenchError(Exception):
    """Base: printed as ``error: <message>`` and the process exits non-zero."""

    exit_code = 2


class ConfigError(BenchError):
    """A configuration value that cannot work; raised before any process starts."""


class PlacementError(BenchError):
    """Guests that do not fit the host (vCPUs, memory, GPUs, framebuffer)."""


class DataError(BenchError):
    """Missing or malformed dataset files."""


def require(condition: bool, key: str, message: str) -> None:
    """Raise ConfigError naming the offending key when ``condition`` is false."""
    if not condition:
        raise ConfigError(f"{key}: {message}")


def first_line(exc: BaseException, limit: int = 200) -> str:
    """An exception as one line: its message's first line, else its type's name."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]
