"""``python -m suites.makeargs '<ARGS>' <module> [args]``: how the Makefile runs a command with the user's
``ARGS``. make hands ARGS over as one single-quoted word; here it is split as a shell splits words (quotes,
backslashes, spaces: ``shlex``) without running anything a shell would (``;``, ``$(...)``, backquotes stay text),
and ``<module>`` replaces this process as ``python -m <module> [args] <ARGS' words>`` (exec, no shell: the
process list, and a run waiting for cores, name the command that runs, not this one).
"""

from __future__ import annotations

import os
import shlex
import sys

__all__ = ["main", "words"]


def words(text: str) -> list[str]:
    """ARGS's words, as a shell would split them (ValueError for an unclosed quote)."""
    return shlex.split(text)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m suites.makeargs '<ARGS>' <module> [args]", file=sys.stderr)
        return 2
    text, module, rest = argv[0], argv[1], argv[2:]
    try:
        extra = words(text)
    except ValueError as exc:
        print(f"error: ARGS={text!r}: {exc} (quote a value with spaces as ARGS=\"key='a b'\")", file=sys.stderr)
        return 2
    os.execv(sys.executable, [sys.executable, "-m", module, *rest, *extra])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
