"""``make size``, laid out as every campaign command (docs/development.md): its command (:mod:`command`), the
``sizing.*`` settings (:mod:`settings`), what a sizing measures fitted to its budget (:mod:`plan`), those consolidations
as a campaign (:mod:`campaign`), read back from the store (:mod:`results`), the answer solved and recorded
(:mod:`conclude`) and its report (:mod:`report`); what feeds the pure capacity maths (``suites/capacity/``): the
measured phases as curve steps (:mod:`measured`) and a fleet's candidates (:mod:`fleet_candidates`)."""
