"""Domain proof and the welcome-credit grant."""
