"""What a command line passes before anything starts or is written: its overrides parse as Hydra reads them, and
the folders a run writes can be made, outside the source tree. Used by ``bench`` and ``study`` alike."""

from __future__ import annotations

import re
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from suites.config.schema import CONFIG_DIR, BenchConfig, one_line
from suites.errors import ConfigError
from suites.record.outdirs import require_output_dir
from suites.record.store import sqlite_path

__all__ = ["check_out_dirs", "require_parseable", "unparseable"]


def require_parseable(overrides: list[str]) -> None:
    """Every override as Hydra's grammar reads it, else one line naming the key and the fix (a non-ASCII or
    otherwise unquoted value is, to Hydra, a bare ``LexerNoViableAltException`` or a 3-line message)."""
    parser = OverridesParser.create()
    for given in overrides:
        try:
            parsed = parser.parse_override(given)
        except HydraException as exc:
            raise ConfigError(unparseable(given, exc)) from None
        require_file_names(parsed.key_or_group, str(parsed.value()) if parsed.value() is not None else "")


NAME_MAX = 255  # a file name's bytes on Linux file systems


def require_file_names(key: str, value: str) -> None:
    """Hydra looks a key up as a config group folder, and a group's value as a file in it: a name longer than a
    file name can be was ``OSError: File name too long`` from deep inside Hydra."""
    plain = key.lstrip("+~")
    for what, names in (("key", re.split(r"[./@]", plain)), ("value", value.split("/"))):
        if what == "value" and not (plain.startswith("hydra/") or (CONFIG_DIR / plain.split("@")[0]).is_dir()):
            return  # not a group's: a value, never a file name
        for name in names:
            if len(name.encode()) > NAME_MAX:
                raise ConfigError(f"{key[:30]}{'…' if len(key) > 30 else ''}: a {what} of {len(name.encode())} "
                                  f"bytes; Hydra looks it up as a file name, which holds at most {NAME_MAX}")


def unparseable(given: str, exc: Exception) -> str:
    key, eq, value = given.partition("=")
    if not eq:
        return f"{given!r}: not an override (key=value): {one_line(exc)}"
    shown = value if value.isprintable() else repr(value)  # one line, whatever the value holds
    if not value.isprintable() or value[:1] in ("'", '"'):
        return f"{key}: the value {shown} cannot be parsed ({one_line(exc)}); check its quotes and characters"
    quote = '"' if "'" in value and '"' not in value else "'"
    inner = value.replace("'", "\\'") if quote == "'" else value  # both quotes in it: Hydra's \' escape
    return f"{key}: the value {value} cannot be parsed as written; quote the value: {key}={quote}{inner}{quote}"


def check_out_dirs(cfg: BenchConfig) -> None:
    """The data cache, the artifact root and the local MLflow stores' folders (the fallback's too) can be made,
    outside the source tree."""
    folders = {"data.cache_dir": Path(cfg.data.cache_dir), "artifact_dir": Path(cfg.artifact_dir)}
    for key in ("tracking_uri", "fallback_tracking_uri"):  # the fallback store is written when the first is down
        db = sqlite_path(getattr(cfg, key))
        if db is not None:
            folders[key] = db.parent
            if db.exists() and not db.is_file():
                raise ConfigError(f"{key}: {db} is not a file (an MLflow sqlite store is one file)")
    for key, folder in folders.items():
        require_output_dir(folder, key)


def refuse_run_dirs(overrides: list[str], command: str, key: str, default: str) -> None:
    """A command that writes every part under its own folder setting (``key``, default ``default``): a Hydra run or
    sweep folder given to it would be taken silently and never used."""
    for given in overrides:
        name = given.partition("=")[0].lstrip("+~")
        if name in ("hydra.run.dir", "hydra.sweep.dir"):
            raise ConfigError(f"{name}: a {command} writes its parts under {key} (default {default}); "
                              f"give {key}=<folder> instead")
