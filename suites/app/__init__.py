"""Command lines: ``bench`` (the Hydra entry; ``make bench``), ``report`` (``make report``), ``sync``,
``bench_ml`` (``make bench-ml``). They assemble the layers below; the policies live there."""
