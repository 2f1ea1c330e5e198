"""What a person looks at: console tables, figures, the study's Markdown/HTML report. Nothing here writes to
MLflow; the caller decides where the files go."""
