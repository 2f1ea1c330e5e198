"""Records: the run directory and the MLflow store (with its fallback) through one Recorder, the store read
back for reports, and the import of runs recorded while a store was down. Nothing here draws or prints tables."""
