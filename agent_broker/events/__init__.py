"""Events without a public endpoint: an account reads its own events by long-poll or as a stream."""
