"""Importers: trajectories recorded elsewhere, turned into the contract (source="external")."""
