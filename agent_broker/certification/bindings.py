"""The liveness contract, served at /bindings/liveness-v1 for agent developers. The probe
(agent_broker.certification.probe) follows it to the letter; the identifier is frozen."""

LIVENESS_V1 = """\
# liveness-v1

How agent-broker checks that a deal route answers. A route that follows this contract
passes the free test (POST /v1/account/certification/test) and the scheduled checks of a
certification subscription.

## The probe

    POST {deal_route}
    Content-Type: application/json

    {"type": "liveness-v1", "nonce": "<32 lowercase hex characters>"}

- Sent to the account's current deal route exactly (no path added), over HTTPS, from the
  broker's own address. Redirects are not followed: a 3xx answer fails.
- No credential is sent; the probe carries nothing from any deal.
- A new nonce is drawn for every probe.

## The answer that passes

- A 2xx status within 10 seconds of the connection starting (connecting, TLS and the
  whole body included),
- a JSON object body of at most 4,096 bytes,
- whose member `nonce` is the nonce sent, unchanged.

Anything else fails: another status, a timeout, a body that is not JSON or echoes another
nonce, a host that resolves to a private or loopback address, a TLS certificate that does
not verify. Other members in the answer are ignored, so a route can answer, for example:

    HTTP/1.1 200 OK
    Content-Type: application/json

    {"type": "liveness-v1", "nonce": "<the nonce sent>", "status": "ok"}

## What counts

- The free test never counts for the badge; it is what a subscription needs first (a
  passing test of the current route within 24 hours).
- Scheduled checks of a subscribed route count. The badge is set at the daily update
  when at least 90% of at least 4 checks over the last 7 days passed.
- Changing the deal route starts the evidence window again: checks of an earlier route
  no longer count.
"""
