"""Generated wire code for proto package deniable (do not edit; run `make proto`)."""
