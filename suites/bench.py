"""``python -m suites.bench``: the bench command (:mod:`suites.commands.bench`) under a short name, for hosts that run
the suite from a checkout with its dependencies on ``PYTHONPATH`` (a bare GPU image) rather than installed."""

from suites.commands.bench import cli

if __name__ == "__main__":
    cli()
