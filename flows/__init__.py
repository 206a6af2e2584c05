"""Prefect flows, deployments and the ``flywheel`` command line. Nothing imports this package."""
