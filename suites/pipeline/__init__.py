"""Running what a command line composed: ``orchestrate`` (plan, lease cores, execute, record, render one scenario
or comparison), ``jobs`` (Hydra's task function: a run or one sweep point), ``hydra_dirs`` (the run and sweep
folders Hydra resolves, checked and pinned), ``sweep_summary`` (Hydra's callback at a sweep's end). It sits above
run/, record/ and render/, which it joins, and below the commands."""
