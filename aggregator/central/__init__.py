"""Central differential privacy for a custodian of raw data, apart from the survey's reports.

Nothing here reads reports, storage or the wire: the custodian holds the rows themselves.

- ``curator``: the trusted curator's noisy queries (count, histogram, sum, mean), its
  privacy budget ledger and its non-interactive release (``deniable-aggregator curate``).
- ``closeness``: the ε- and (n, ε)-closeness audit of a generalized table
  (``deniable-aggregator closeness``).

Each subpackage's ``__init__`` is its public face; the command line and the rest of the
aggregator import only those names. This package imports only ``deniable.shared``.
"""
