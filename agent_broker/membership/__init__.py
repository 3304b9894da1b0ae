"""Joining the market and the account's standing in it: registration (the account with its
wallet and reputation facets), the account view (balance, reputation, domain proof) and
the deal route (which certification checks). These reach across features, so they sit
above accounts, which keeps the account's own row, keys and contact."""
