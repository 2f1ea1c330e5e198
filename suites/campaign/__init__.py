"""Campaigns: many comparisons nested under one parent run (``make study``, ``make size``), as plain data
(:mod:`spec`) and the one executor that runs any of them (:mod:`executor`)."""

from suites.campaign.costs import stop_group
from suites.campaign.executor import execute
from suites.campaign.spec import Campaign, CampaignPart, CampaignRun, PartRun

__all__ = ["Campaign", "CampaignPart", "CampaignRun", "PartRun", "execute", "stop_group"]
