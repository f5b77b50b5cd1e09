-- A channel's daily spend cap is the operator's (CHANNEL_DAILY_BUDGET_USD): `budget` raises a
-- session's cap only, so no raised channel cap is kept any more.
DROP TABLE "channel_budgets";
