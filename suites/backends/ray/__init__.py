"""``backend=ray``: guests as Ray actors on a cluster (``cluster.py``: joining it, placing and starting them), the
agent each actor runs on its node (``agent.py``), and ``ray.placement=per-node``'s fleet of a site's vGPU VMs, one
guest per node whose GPU is the profile (``fleet.py``)."""
