"""Usage collected from the gateways, and the budgets enforced on it (issue 29).

``UsageDay`` is one Agent, model and UTC day as the runtime reports it: the gateway recomputes a
day's totals from its transcripts every time it is asked, so a row holds the latest figure for
its day and never a sum of deltas; a figure only grows (a gateway that restarted with less
history never lowers a finished day). Rows name their Agent and Namespace by id, not by foreign
key, so an Agent's history outlives it.
"""

from __future__ import annotations

from django.db import models

from occ.ids import IdPrefix, id_default
from occ.models.base import TimestampedModel, choices_check

COST_PLACES = 8


class UsageDay(models.Model):
    namespace_id = models.CharField(max_length=64)
    agent_id = models.CharField(max_length=64)
    agent_name = models.CharField(max_length=800)  # as it was when last collected
    day = models.DateField()
    provider = models.CharField(max_length=200)
    model = models.CharField(max_length=200)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(max_digits=20, decimal_places=COST_PLACES, default=0)  # USD, as the runtime prices it
    collected_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent_id", "day", "provider", "model"],
                                               name="usage_day_unique")]
        indexes = [models.Index(fields=["namespace_id", "day"], name="usage_day_namespace"),
                   models.Index(fields=["day"], name="usage_day_day")]

    def __str__(self) -> str:
        return f"{self.agent_name} {self.model} {self.day}"

    @property
    def cached_tokens(self) -> int:
        return self.cache_read_tokens + self.cache_write_tokens


class BudgetPeriod(models.TextChoices):
    DAY = "day"
    MONTH = "month"


BUDGET_THRESHOLDS = (50, 80, 100)


class Budget(TimestampedModel):
    """A spending limit on a Namespace (``agent`` null) or on one Agent, per UTC day or month.

    ``notified_percent``/``notified_period`` remember the highest threshold already announced
    in the current period, so each of 50/80/100 % is announced once. ``override_period`` is an
    administrator's override: the Agents it covers may run past 100 % until that period ends.
    """

    id = models.CharField(primary_key=True, max_length=64, default=id_default(IdPrefix.BUDGET), editable=False)
    namespace = models.ForeignKey("occ.Namespace", on_delete=models.CASCADE, related_name="budgets")
    agent = models.ForeignKey("occ.Agent", null=True, blank=True, on_delete=models.CASCADE, related_name="budgets")
    period = models.CharField(max_length=8, choices=BudgetPeriod.choices)
    limit = models.DecimalField(max_digits=20, decimal_places=COST_PLACES)  # USD
    webhook_url = models.URLField(max_length=2000, blank=True, default="")
    # The OCC Secret (same Namespace) whose value signs the webhook (HMAC-SHA256); never stored here.
    webhook_secret = models.ForeignKey("occ.Secret", null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+")
    notified_percent = models.PositiveSmallIntegerField(default=0)
    notified_period = models.DateField(null=True, blank=True)
    override_period = models.DateField(null=True, blank=True)
    set_by = models.CharField(max_length=64)  # the principal the pause's stop work acts as

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "period"], condition=models.Q(agent__isnull=True),
                                    name="budget_one_per_namespace_period"),
            models.UniqueConstraint(fields=["agent", "period"], condition=models.Q(agent__isnull=False),
                                    name="budget_one_per_agent_period"),
            choices_check("period", BudgetPeriod, "budget_period_valid"),
            models.CheckConstraint(condition=models.Q(limit__gt=0), name="budget_limit_positive"),
        ]
        # The API's list: keyset pages on (created_at, id).
        indexes = [models.Index(fields=["namespace", "created_at", "id"], name="budget_created_order")]
