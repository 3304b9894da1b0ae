"""Tokens: the Ed25519 signing key, the published key document, and minting and verifying
PASETO v4.public tokens (deal credentials, later reputation statements)."""
