"""Curation: checks that mark episodes (never delete), selection, and export formats."""
