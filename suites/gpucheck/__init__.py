"""``make gpu-check``, laid out as every campaign command (docs/development.md): its command (:mod:`command`),
its keys (:mod:`settings`), its checks in priority order as one campaign under one deadline (:mod:`campaign`), how it
ends (:mod:`conclude`) and its summary, device file and tarball (:mod:`report`); the checks themselves (``checks``,
``suite_checks``: each GPU path of the suite run for real), their judges (``judges``: what each result should be on a
healthy GPU), and ``make rehearse``'s stand-ins (``played``) and judges (``rehearsal``)."""
