"""``make size`` below its command: what a sizing measures (:mod:`parts`), those consolidations as a campaign
(:mod:`consolidations`), read back from the store (:mod:`read`), and the answer solved, reported and recorded
(:mod:`answer`); the pure capacity maths is ``suites/capacity/``."""
