"""Running scenarios: plan (placement, data, specs), execute into a plain-data outcome, and the pure
comparisons over outcomes (normalised phases, the mixed and consolidation scenarios). No files, no MLflow here."""
