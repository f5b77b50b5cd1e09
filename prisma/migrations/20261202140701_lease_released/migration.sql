-- AlterTable
ALTER TABLE "session_leases" ADD COLUMN     "released" BOOLEAN NOT NULL DEFAULT false;

-- Leases released before this migration had their owner cleared.
UPDATE "session_leases" SET "released" = true WHERE "owner" = '';
