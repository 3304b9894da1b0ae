"""Certification: paid liveness checks of an account's deal route and the public badge."""
