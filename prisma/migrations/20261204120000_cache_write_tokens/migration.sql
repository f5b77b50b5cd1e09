-- AlterTable
ALTER TABLE "model_calls" ADD COLUMN     "cache_write_tokens" INTEGER;
