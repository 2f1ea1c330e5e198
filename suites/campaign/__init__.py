"""Campaigns: many comparisons nested under one parent run (``make study``, ``make size``, ``make gpu-check``), as
plain data (:mod:`spec`), the one executor that runs any of them (:mod:`executor`), a part composed (:mod:`parts`),
and what a phase run costs: the planner's table and the trial runs that time this host (:mod:`costs`). A campaign
package imports these names from here, never a module of this package (``tests/test_layout.py``)."""

from suites.campaign.costs import (
    CACHE,
    OVERHEAD_S,
    REPEAT_S,
    START_S,
    TRIAL_SHARE,
    WORK_S,
    cached_trials,
    stop_group,
    time_trials,
)
from suites.campaign.executor import Conclude, Conclusion, execute
from suites.campaign.parts import compose_part
from suites.campaign.spec import (
    MEASURED,
    NOT_RUN,
    SKIPPED,
    Campaign,
    CampaignPart,
    CampaignRun,
    Reuse,
    overran,
)

__all__ = ["CACHE", "MEASURED", "NOT_RUN", "OVERHEAD_S", "REPEAT_S", "SKIPPED", "START_S", "TRIAL_SHARE",
           "WORK_S", "Campaign", "CampaignPart", "CampaignRun", "Conclude", "Conclusion", "Reuse",
           "cached_trials", "compose_part", "execute", "overran", "stop_group", "time_trials"]
