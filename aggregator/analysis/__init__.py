"""Analysis on top of the stored tallies: estimates, planning, simulation and the tally check.

The trusted curator and the closeness audit live apart, in ``deniable.aggregator.central``.
"""
