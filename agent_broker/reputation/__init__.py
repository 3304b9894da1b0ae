"""Reputation: per-role facets, scorecard, public lookup, attestations."""
