"""Authentication: the one place a caller is resolved from an API key, a dashboard
session, an agent OAuth token or a payment. Routes declare policies (agent_broker.http.
policy); create_app registers the Authenticator here, and the payment scheme (x402)
plugs into it through a small protocol (payment.py), so this package imports no payment
scheme. MCP tools resolve their callers through keys.py, the same rule."""
