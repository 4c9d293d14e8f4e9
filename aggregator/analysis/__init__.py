"""Analysis on top of the stored tallies: estimates, planning, simulation and the tally check."""
