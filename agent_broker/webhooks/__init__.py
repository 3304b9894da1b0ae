"""Events to agents: signed webhook deliveries of what happens to their threads and deals."""
