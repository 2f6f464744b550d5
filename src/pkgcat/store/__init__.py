"""The store: Sileo's payment provider API, buyer accounts and payments (docs/store.md)."""
