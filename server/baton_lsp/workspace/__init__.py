"""Workspace discovery, configuration and the index of parsed files."""
