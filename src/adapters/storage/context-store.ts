// The worker context: segments and their messages, byte-exact (the prompt cache depends on it),
// steer injection at checkpoints (R9), segment rotation on reset (R6) and search of originals (R15),
// each in a file of its own (context-messages, context-steers, context-segments, context-search).
import type { ContextStore } from '../../core/store.js';
import type { PrismaClient } from '../../../prisma/generated/client.js';
import type pg from 'pg';
import { createContextMessages } from './context-messages.js';
import { createOriginalsSearch } from './context-search.js';
import { createSegmentRotation } from './context-segments.js';
import { createSteerTaking } from './context-steers.js';
import { SearchGuard } from './search-guard.js';
import { statementsOn } from './statements.js';

/** Creates the Prisma-backed ContextStore. */
export function createContextStore(prisma: PrismaClient, pool?: pg.Pool, search = new SearchGuard()): ContextStore {
  // The statements of every step; the rest (resets, search, repairs) stay on Prisma.
  const hot = statementsOn(prisma, pool);
  return {
    ...createContextMessages(prisma, hot),
    ...createSteerTaking(hot),
    ...createSegmentRotation(prisma),
    ...createOriginalsSearch(prisma, search),
  };
}
