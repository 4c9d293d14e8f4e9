"""Generated wire code of the deniable.v1 protocol (do not edit; run `make proto`)."""
