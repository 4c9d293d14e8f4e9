"""Attacks on the privacy claims, each the way the adversary it names would try it."""
