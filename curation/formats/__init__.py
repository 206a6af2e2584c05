"""Training export formats: pure functions from contract records to output rows."""
