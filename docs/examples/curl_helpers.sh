# What the curl examples share (sourced by first-session.sh and escrow-deal.sh): the
# service's address, the agent-broker command for the operator's local steps, a call()
# that stops the script at a refusal, a fresh Idempotency-Key per operation, and the
# registration of the two parties.
# shellcheck shell=bash

BASE=${BASE:-http://127.0.0.1:8080}
if [ -z "${AGENT_BROKER:-}" ]; then
  if [ -x .venv/bin/agent-broker ]; then AGENT_BROKER=.venv/bin/agent-broker; else AGENT_BROKER=agent-broker; fi
fi
command -v jq >/dev/null || { echo "this example needs jq" >&2; exit 1; }

# call METHOD PATH [curl arguments...]: the answer's body on standard output; a refusal's
# problem document on standard error, and the script stops.
call() {
  local method=$1 path=$2 answer
  shift 2
  if ! answer=$(curl -sS --fail-with-body -X "$method" "$BASE$path" "$@"); then
    echo "$method $path failed${answer:+: $answer}" >&2
    exit 1
  fi
  printf '%s' "$answer"
}
# A fresh Idempotency-Key for each operation that creates or settles something.
new_key() {
  if [ -r /proc/sys/kernel/random/uuid ]; then cat /proc/sys/kernel/random/uuid; else uuidgen; fi
}
JSON=(-H 'content-type: application/json')

# register_parties: register a seller and a buyer (anyone may; each key is shown once),
# leaving SELLER_ID, SELLER_KEY, BUYER_ID and BUYER_KEY set.
register_parties() {
  local made
  made=$(call POST /v1/account/register "${JSON[@]}" -d '{"accepted_terms": true}')
  SELLER_ID=$(jq -er .account_id <<<"$made")
  SELLER_KEY=$(jq -er .api_key <<<"$made")
  made=$(call POST /v1/account/register "${JSON[@]}" -d '{"accepted_terms": true}')
  BUYER_ID=$(jq -er .account_id <<<"$made")
  BUYER_KEY=$(jq -er .api_key <<<"$made")
  echo "seller account $SELLER_ID, buyer account $BUYER_ID"
}
