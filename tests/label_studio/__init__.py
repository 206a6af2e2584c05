"""A real Label Studio for the integration tests: its own virtual environment, a fresh data
directory, users with personal access tokens (see README, Label Studio: tests)."""
