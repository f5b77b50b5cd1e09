-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "budget_usd" DOUBLE PRECISION;

-- CreateTable
CREATE TABLE "channel_budgets" (
    "platform" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "channel_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "budget_usd" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "channel_budgets_pkey" PRIMARY KEY ("platform","workspace_id","channel_id","day")
);
