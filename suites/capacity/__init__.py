"""Capacity planning (``python -m suites size``): consolidation curves read for guests per GPU with their confidence
(curve.py), and a mix of CAD users and ML users taken to a profile, GPUs, hosts and a cost (solver.py). Pure: the
command that feeds them measured runs is apart."""
