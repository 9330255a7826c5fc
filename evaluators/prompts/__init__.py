"""Judge prompt files (YAML, id + version) used by babelrag.evaluators.judges."""
