"""The ledger: the only place money moves. Double-entry journal, wallet balances, holds."""
