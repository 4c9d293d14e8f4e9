"""Generated wire code for deniable.v1 (do not edit; run `make proto`)."""
