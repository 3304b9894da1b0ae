"""x402: paying per call with a signed stablecoin authorization instead of holding a key."""
