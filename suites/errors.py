"""Errors that end a run with one clear line instead of a traceback, and text that is safe to show or store."""

from __future__ import annotations

import re
import sys
from typing import NoReturn

# user:password@ in a URI, and token-like query values (?token=..., &api_key=..., &password=...)
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@")
_SECRET_QUERY = re.compile(r"(?P<key>[?&;](?:[a-z_]*token|[a-z_]*key|password|passwd|pwd|secret|sig|signature|auth)"
                           r"=)[^&;#\s'\"]+", re.IGNORECASE)
REDACTED = "***"


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


# A first line that says how an error was raised, not what it was: the line after it does (SQLAlchemy's, through
# MLflow: "(raised as a result of Query-invoked autoflush; ...)" then "(sqlite3.OperationalError) database or disk
# is full").
PREAMBLES = ("(raised as a result of ",)


def first_line(exc: BaseException, limit: int = 200) -> str:
    """An exception as one line, secrets redacted: its message's first line (past a preamble), else its type's
    name."""
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    said = next((ln for ln in lines if not ln.startswith(PREAMBLES)), lines[0] if lines else type(exc).__name__)
    return redact(said)[:limit]


def redact(text: str) -> str:
    """``text`` without credentials: URI user-info and token-like query values become ``***``.

    Every URI the suite prints or stores (params, tags, config files, warnings) passes through here; MLflow
    reads credentials from MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD, never from a recorded URI.
    """
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    return _SECRET_QUERY.sub(lambda m: f"{m.group('key')}{REDACTED}", text)


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def inert(text: object) -> str:
    """Text a file or store brought, as a terminal line that does only what it says: every control character (a
    newline that forges a line, an escape that hides the lines after it, a bidirectional override) shown as its
    escape (``\\n``, ``\\x1b``), never acted on."""
    return CONTROL.sub(lambda m: ascii(m.group())[1:-1], str(text))


def fail(message: str, code: int = 2) -> NoReturn:
    """Bad input said as one ``error:`` line and the command ended with ``code`` (2): before anything starts."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


class RenamedSetting(FutureWarning):
    """A setting given under its old name, read until the next release: the suite's own FutureWarning."""


def renamed_settings_in_one_line() -> None:
    """A command's :class:`RenamedSetting` warnings as one ``warning:`` line each, as the suite's other warnings:
    Python's own format put the dataclass's generated ``__init__`` before it (``<string>:15: FutureWarning:
    profile.kind is ...``). Other warnings (a library's FutureWarning too) keep Python's format. Once a process."""
    import warnings

    shown = warnings.showwarning
    if getattr(shown, "renamed_settings", False):  # python -m suites bench: the entry, then the bench module
        return

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001, ANN202 - warnings' hook
        if issubclass(category, RenamedSetting):
            print(f"warning: {message}", file=file or sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    show.renamed_settings = True  # type: ignore[attr-defined]
    warnings.showwarning = show
