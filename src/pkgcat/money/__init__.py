"""The sellers' money: commissions, the ledger, payouts and refunds (docs/money.md)."""
