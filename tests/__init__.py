"""Test suite for deniable."""
