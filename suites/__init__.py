"""Workloads, guests and the scenario runner of the mixed-workload GPU benchmark."""
