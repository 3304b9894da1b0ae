#!/usr/bin/env bash
# A2A with curl: fetch the signed agent card, then ask the service's A2A 1.0 endpoint.
#
# What it shows: the agent card at /.well-known/agent-card.json (its JSON-RPC interface,
# its one skill, its detached JWS signature) and the key that signs it at
# /.well-known/jwks.json; a `SendMessage` over JSON-RPC to the interface the card names,
# with the `A2A-Version: 1.0` header, answered by one message whose text is the guide of
# /llms.txt; and the same request without the header, answered (with HTTP 200, as every
# JSON-RPC answer) by error -32009, version not supported. No key is needed.
# docs/examples/a2a_client.py does the same with the a2a-sdk and verifies the signature.
#
# Run it against a local server:
#
#     make run                      # terminal 1: serves http://127.0.0.1:8080
#     bash docs/examples/a2a.sh     # terminal 2
#
# BASE is the service's address (default http://127.0.0.1:8080). Needs curl and jq.
# Exits non-zero when a request fails or an answer lacks what is shown.
set -euo pipefail

BASE=${BASE:-http://127.0.0.1:8080}
command -v jq >/dev/null || { echo "this example needs jq" >&2; exit 1; }

echo "== The agent card"
CARD=$(curl -sS --fail-with-body "$BASE/.well-known/agent-card.json")
jq -e '{name, version, interfaces: .supportedInterfaces, skills: [.skills[].id],
        signatures: (.signatures | length)}' <<<"$CARD"
curl -sS --fail-with-body "$BASE/.well-known/jwks.json" | jq -ec '.keys[] | {kid, kty, crv}'

# The JSON-RPC interface the card names (the service's public base URL and /a2a).
A2A_URL=$(jq -er '.supportedInterfaces[] | select(.protocolBinding == "JSONRPC") | .url' <<<"$CARD")
SEND='{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
       "params": {"message": {"messageId": "first-contact-1", "role": "ROLE_USER",
                              "parts": [{"text": "How do I start trading here?"}]}}}'

echo "== SendMessage to $A2A_URL (the answer's first lines)"
curl -sS --fail-with-body -X POST "$A2A_URL" -H 'A2A-Version: 1.0' \
  -H 'content-type: application/json' -d "$SEND" |
  jq -er '.result.message | "role: \(.role)", (.parts[0].text | split("\n")[:8][])'

echo "== The same without A2A-Version (read as 0.3): a JSON-RPC error"
curl -sS --fail-with-body -X POST "$A2A_URL" -H 'content-type: application/json' -d "$SEND" |
  jq -ec '.error | {code, message}'
