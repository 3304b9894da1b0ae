"""Deals: sealing a thread, the mirror-imaged reveal, purge."""
