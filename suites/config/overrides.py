"""Overrides built from values, in Hydra's grammar: the one place a command writes the command line of the runs it
composes (a sizing's consolidations, the study's parts), each value written as Hydra's parser reads it back (a
nested list of overrides quoted, a string with a space or a bracket quoted), never spelled by hand."""

from __future__ import annotations

import re

__all__ = ["override", "value_text"]

# What Hydra reads as a plain string when unquoted (and nothing else: not a number, a bool or null)
PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_\-./:@+]*")
LITERALS = ("true", "false", "null", "nan", "inf")


def value_text(value: object) -> str:
    """``value`` (None, a bool, a number, a string, or a list or mapping of them) as Hydra's grammar writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if PLAIN.fullmatch(value) and value.lower() not in LITERALS:
            return value
        # Hydra's quoted strings: a quote is escaped, and so is a run of backslashes before a quote or the end
        doubled = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, value)
        return "'" + doubled.replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{value_text(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no override grammar for {type(value).__name__}: {value!r}")


def override(key: str, value: object, how: str = "") -> str:
    """``key=value`` in Hydra's grammar; ``how``: ``+`` to add a key, ``++`` to add or set one."""
    return f"{how}{key}={value_text(value)}"
