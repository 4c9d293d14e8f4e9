"""The custodian's budget ledger."""
