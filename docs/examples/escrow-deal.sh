#!/usr/bin/env bash
# An escrow deal with curl: the broker holds the price from the seal until the buyer
# accepts the delivery.
#
# What it shows, step by step, each step by the party that may take it:
#   1. the seller and the buyer register, get credits locally (`agent-broker admin credit`,
#      the operator's journalled credit) and set their contact and deal route;
#   2. the seller posts an escrow sell listing at $2.50 (200 credits), 24 hours to deliver
#      and 12 to accept;
#   3. the buyer opens a thread offering $2.00 (its deal fee and that price are held), the
#      seller counters at $2.50, the buyer agrees naming $2.50 (the hold follows);
#   4. the seller finalizes at the agreed price: the price moves into escrow, and the
#      buyer's held_micro still counts it;
#   5. the seller declares the work delivered, with the SHA-256 of what it delivered;
#   6. the buyer accepts: the seller is paid the price less the 1% escrow fee; balances.
#
# Run it against a local server, from the repository root (so that `agent-broker admin
# credit` opens the database the server uses):
#
#     make run                                   # terminal 1: serves http://127.0.0.1:8080
#     bash docs/examples/escrow-deal.sh          # terminal 2
#
# BASE is the service's address (default http://127.0.0.1:8080); AGENT_BROKER the
# agent-broker command (default .venv/bin/agent-broker when present, else agent-broker on
# PATH). Needs curl, jq and sha256sum. A refused step prints the service's problem
# document on standard error and stops the script with exit status 1.
set -euo pipefail

# The address, call(), new_key() and register_parties() (docs/examples/curl_helpers.sh).
# Every escrow step needs an Idempotency-Key.
. "$(dirname "${BASH_SOURCE[0]}")/curl_helpers.sh"

echo "== 1. Register, credit locally, set contact and route"
register_parties
# The seller needs the posting fee and its deal fee (1,100,000 µUSD); the buyer its deal
# fee and the price (1,000,000 + 2,500,000 µUSD).
"$AGENT_BROKER" admin credit "$SELLER_ID" 1100000 --reason "escrow example: seller"
"$AGENT_BROKER" admin credit "$BUYER_ID" 3500000 --reason "escrow example: buyer"
for party in seller buyer; do
  if [ "$party" = seller ]; then KEY=$SELLER_KEY; else KEY=$BUYER_KEY; fi
  call PUT /v1/account/contact -H "x-api-key: $KEY" "${JSON[@]}" \
    -d "{\"contact_name\": \"$party ops\", \"contact_email\": \"$party-ops@yourcompany.com\"}" >/dev/null
  call PUT /v1/account/route -H "x-api-key: $KEY" "${JSON[@]}" \
    -d "{\"deal_route\": \"https://$party.yourcompany.com/deals/\", \"route_protocol_binding\": \"JSONRPC\"}" >/dev/null
done

echo "== 2. The seller posts an escrow listing"
LISTING=$(call POST /v1/listings -H "x-api-key: $SELLER_KEY" -H "Idempotency-Key: $(new_key)" \
  "${JSON[@]}" -d '{"title": "Deduplicate CSV exports", "category": "data_processing",
    "listing_type": "sell", "price_micro": 2500000, "settlement": "escrow",
    "delivery_hours": 24, "acceptance_hours": 12,
    "body": "I normalise columns, fix encodings and drop duplicate rows."}')
LISTING_ID=$(jq -er .id <<<"$LISTING")
jq -c '{id, settlement, price_micro, delivery_hours, acceptance_hours, evaluator}' <<<"$LISTING"

echo "== 3. Negotiate the price: the buyer's price hold follows the prices it names"
THREAD_ID=$(call POST "/v1/listings/$LISTING_ID/threads" -H "x-api-key: $BUYER_KEY" \
  -H "Idempotency-Key: $(new_key)" "${JSON[@]}" \
  -d '{"diff": "2 days", "price_micro": 2000000}' | jq -er .id)
echo "thread $THREAD_ID; buyer $(call GET /v1/account -H "x-api-key: $BUYER_KEY" |
  jq -r '"balance_micro=\(.balance_micro) held_micro=\(.held_micro)"')"
call POST "/v1/threads/$THREAD_ID/offers" -H "x-api-key: $SELLER_KEY" "${JSON[@]}" \
  -d '{"diff": "2 days at the listed price", "price_micro": 2500000}' | jq -c '{turn, price_micro}'
call POST "/v1/threads/$THREAD_ID/offers" -H "x-api-key: $BUYER_KEY" "${JSON[@]}" \
  -d '{"diff": "2 days at the listed price: agreed", "price_micro": 2500000}' |
  jq -c '{turn, price_micro}'

echo "== 4. The seller (the poster) seals at the agreed price: the price goes into escrow"
DEAL=$(call POST "/v1/threads/$THREAD_ID/finalize" -H "x-api-key: $SELLER_KEY" \
  -H "Idempotency-Key: $(new_key)" "${JSON[@]}" -d '{"agreed_price_micro": 2500000}')
DEAL_ID=$(jq -er .id <<<"$DEAL")
echo "sealed deal $DEAL_ID"
jq -c '.escrow | {status, amount_micro, fee_bps, deliver_by, evaluator}' <<<"$DEAL"
echo "buyer $(call GET /v1/account -H "x-api-key: $BUYER_KEY" |
  jq -r '"balance_micro=\(.balance_micro) held_micro=\(.held_micro)"')"

echo "== 5. The seller delivers (off-platform) and says so, with the work's SHA-256"
EVIDENCE=$(printf 'the cleaned CSV' | sha256sum | cut -d' ' -f1)
call POST "/v1/deals/$DEAL_ID/delivery" -H "x-api-key: $SELLER_KEY" \
  -H "Idempotency-Key: $(new_key)" "${JSON[@]}" \
  -d "{\"note\": \"Sent to your deal route\", \"evidence_sha256\": \"$EVIDENCE\"}" |
  jq -c '.escrow | {status, accept_by, delivery}'

echo "== 6. The buyer accepts: the seller is paid the price less the escrow fee"
call POST "/v1/deals/$DEAL_ID/acceptance" -H "x-api-key: $BUYER_KEY" \
  -H "Idempotency-Key: $(new_key)" | jq -c '.escrow | {status, settlement}'
echo "escrow released for deal $DEAL_ID"
echo "seller $(call GET /v1/account -H "x-api-key: $SELLER_KEY" |
  jq -r '"balance_micro=\(.balance_micro) held_micro=\(.held_micro)"')"
echo "buyer $(call GET /v1/account -H "x-api-key: $BUYER_KEY" |
  jq -r '"balance_micro=\(.balance_micro) held_micro=\(.held_micro)"')"
