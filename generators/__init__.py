"""Task generation and collection: the simulated phone, task writers, policies, the collector."""
