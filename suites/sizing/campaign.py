"""A sizing as a campaign: one part per consolidation to measure, each reused from the store where an earlier sizing
measured the same thing (looked for again once its cores are leased: two sizings of the same thing at once measure
it once)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from suites import store_keys as keys
from suites.campaign import Campaign, CampaignPart, CampaignRun
from suites.campaign.spec import Reuse
from suites.sizing.plan import SizingPart, SizingPlan
from suites.sizing.results import Key, reusable
from suites.sizing.settings import SizingSettings

KIND = keys.SIZING


def campaign_of(settings: SizingSettings, plan: SizingPlan, started: float = math.inf) -> Campaign:
    """The plan's consolidations, each a part leased on its own (a profile that does not fit is not measured, the
    others are) with its estimate, under a hard deadline: ``sizing.budget_s`` after ``started`` (time.monotonic()),
    so a consolidation that cannot end by it does not start, and the answer says it was not measured."""
    parts = [CampaignPart(p.label, p.comp, {keys.SIZING_KEY: p.key}, p.estimate_s, reuse=reuser(p, settings))
             for p in plan.parts]
    return Campaign(KIND, "size", Path(settings.out_dir), parts, keys.SIZING_PART, noun="consolidation",
                    deadline=started + settings.budget_s)


def reuser(part: SizingPart, settings: SizingSettings) -> Reuse:
    """A stored consolidation of the part's measurement, looked for in the store the sizing records into (before
    and after the part's lease: why one is measured again is said once)."""
    said: set[str] = set()

    def once(run: CampaignRun) -> Callable[[str], None]:
        def say(line: str) -> None:
            if line not in said:
                said.add(line)
                run.nest.recorder.say(line)
        return say

    def reuse(run: CampaignRun) -> tuple[str, str] | None:
        return reusable(run.reader, part, settings, once(run))
    return reuse


def measured_ids(plan: SizingPlan, run: CampaignRun) -> dict[Key, str]:
    """(profile, policy, CAD user type) -> its consolidation run, measured now or reused."""
    by_label = {p.label: (p.profile, p.policy, p.user_type) for p in plan.parts}
    return {by_label[name]: run_id for name, run_id in run.run_ids().items()}
