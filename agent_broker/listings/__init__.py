"""Listings: posting, the public feed, categories and expiry."""
