# What the curl examples share (sourced by first-session.sh and escrow-deal.sh): the
# service's address, the agent-broker command for the operator's local steps, a call()
# that stops the script at a refusal, and a fresh Idempotency-Key per operation.
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
