"""``make gpu-check``'s checks (``checks``: each GPU path of the suite run for real) and their judges (``judges``:
what each result should be on a healthy GPU). Its command is :mod:`suites.commands.gpu_check`."""
