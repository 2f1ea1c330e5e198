"""A JSON document from elsewhere checked on its JSON Schema (``suites/schemas/<name>.json``), as a result
bundle is on its own: a device file (``device``), a CAD frame trace (``frame_trace``). Each problem is said by the
rule that failed: the description of the field's schema (its own words, with the field's name and range), never
the validator's message, which quotes the value (a forged file's text reached the console through it).

JSON Schema cannot say that a number is finite (Python's json reads ``NaN`` and ``Infinity``, and a NaN passes
every bound): :func:`problems` refuses a non-finite number in a field by that field's description too."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

__all__ = ["SCHEMAS", "first_problem", "problems", "schema"]

SCHEMAS = Path(__file__).with_name("schemas")


@functools.cache
def validator(name: str) -> Any:
    from jsonschema import Draft202012Validator

    doc = json.loads((SCHEMAS / f"{name}.json").read_text())
    Draft202012Validator.check_schema(doc)
    return Draft202012Validator(doc)


def schema(name: str) -> dict[str, Any]:
    """The schema ``name`` as JSON (checked as a schema once)."""
    return dict(validator(name).schema)


def problems(name: str, doc: object) -> list[str]:
    """What keeps ``doc`` from being a ``name`` document, each said once, in the schema's order ([]: it is one)."""
    rules = validator(name)
    out = [said(error, rules.schema) for error in rules.iter_errors(doc)]
    if isinstance(doc, dict):
        fields = rules.schema.get("properties", {})
        out += [fields[k].get("description", f"{k} must hold finite numbers") for k, v in doc.items()
                if k in fields and not finite(v)]
    return list(dict.fromkeys(out))


def first_problem(name: str, doc: object) -> tuple[str, str] | None:
    """The problem a ``name`` document is refused with (jsonschema's best match): (where it is, ``tests[0].mode``,
    '' for the document; what its rule says), None where it is one."""
    from jsonschema.exceptions import best_match

    rules = validator(name)
    error = best_match(rules.iter_errors(doc))
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    if error.validator == "required":
        return where, f"missing {missing(error)!r}" if missing(error) else "a field is missing"
    return where, said(error, rules.schema)


def missing(error: Any) -> str:
    """The first field a failed ``required`` rule names that its object lacks ('' where none can be named)."""
    keys = [k for k in error.validator_value if isinstance(error.instance, dict) and k not in error.instance]
    return str(keys[0]) if keys else ""


def said(error: Any, root: dict[str, Any]) -> str:
    """One failed rule, in the schema's words: its own description, else its top-level field's."""
    if error.validator == "type" and not error.absolute_path:
        return f"a JSON object is needed, this is a {type(error.instance).__name__}"
    if error.validator == "required" and not error.absolute_path:
        return f"no {missing(error) or 'required field'}"
    own = error.schema.get("description") if isinstance(error.schema, dict) else None
    field = str(error.absolute_path[0]) if error.absolute_path else ""
    top = root.get("properties", {}).get(field, {}).get("description")
    return str(own or top or f"{field or 'the document'}: fails its {error.validator} rule")


def finite(value: object) -> bool:
    """Every number in ``value`` (nested) finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list):
        return all(finite(v) for v in value)
    return True
