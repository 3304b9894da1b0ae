"""Names of the books in the journal."""

WALLET_PREFIX = "wallet:"
OPERATOR = "system:operator"  # operator adjustments (admin credit)
FEES = "system:fees"  # posting fees and deal fees earned by the service
PROCESSOR_A = "system:processor_a"
PROCESSOR_B = "system:processor_b"
X402 = "system:x402"
GRANTS = "system:grants"  # domain-proof welcome credits
ESCROW = "system:escrow"  # deal prices held from the seal until the escrow settles
PAYOUTS = "system:payouts"  # money the operator paid out off-platform (admin payout)


def wallet_code(account_id: str) -> str:
    return f"{WALLET_PREFIX}{account_id}"


def is_wallet(code: str) -> bool:
    return code.startswith(WALLET_PREFIX)
