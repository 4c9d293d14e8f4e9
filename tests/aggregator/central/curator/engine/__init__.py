"""Tests of the curator's query engine."""
