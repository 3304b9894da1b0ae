"""Meta and discovery: health, version, and the public documents."""
