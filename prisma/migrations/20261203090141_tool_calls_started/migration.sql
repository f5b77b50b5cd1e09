-- AlterTable
ALTER TABLE "context_messages" ADD COLUMN     "started_tool_call_ids" TEXT[] DEFAULT ARRAY[]::TEXT[];
