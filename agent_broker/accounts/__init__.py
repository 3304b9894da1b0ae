"""Accounts: registration, API keys, handle, profile, contact and deal route."""
