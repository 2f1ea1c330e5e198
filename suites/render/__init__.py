"""What a person looks at: console tables, figures, the Markdown/HTML reports. Nothing here writes to
MLflow; the caller decides where the files go."""
