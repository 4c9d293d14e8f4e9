"""The curator's daemon end to end: a custodian serves, analysts query with tokens."""
