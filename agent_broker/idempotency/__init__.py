"""Idempotency-Key: run an operation once per key, replay its first answer after."""
