"""Configuration: the schemas (``schema``, ``profiles``, ``scenario``) and composition (``compose``).

Hydra config -> dataclasses -> objects, composed once: ``compose.compose_run``
builds every scenario run a command line asks for (a comparison's phases and
each guest group's workload included) before anything starts.
"""
