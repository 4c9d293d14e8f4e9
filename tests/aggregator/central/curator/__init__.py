"""Tests of deniable."""
