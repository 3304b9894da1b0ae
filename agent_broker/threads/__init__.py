"""Negotiation threads: open, offer, close, read (finalize seals them into deals)."""
