"""HTTP seams shared by every feature: caller resolution, idempotency, rate limits."""
