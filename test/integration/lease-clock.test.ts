// A lease is held on the database's clock (R10 across replicas): the holder believes it holds the
// lease for what the claim or renewal statement said is left of it, counted on a clock that never
// steps from when the statement was sent. A wall clock set back on the holder's machine (an NTP
// correction, an operator) while its renewals fail cannot make it drive beside the next holder.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLeaseStore } from '../../src/adapters/storage/lease-store.js';
import { createPrismaStores } from '../../src/adapters/storage/prisma-stores.js';
import { LeaseHeartbeat } from '../../src/core/runner/lease-heartbeat.js';
import { LeaseKeeper } from '../../src/core/runner/lease-keeper.js';
import { createLogger } from '../../src/log.js';
import { newThread } from '../support/agent-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { startSession } from '../support/sessions.js';

const log = createLogger('silent');
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database.drop();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('lease clock', () => {
  it('claims what the database says is left of the lease and renews it for that long', async () => {
    const session = await startSession(createPrismaStores(database.prisma), newThread());
    const leases = createLeaseStore(database.prisma, database.pool);
    const lease = await leases.acquire(session.id, 'clock-a', 5_000);
    expect(lease?.validForMs).toBeGreaterThan(4_000);
    // expires_at keeps milliseconds, now() microseconds: the rounding may add up to half a millisecond.
    expect(lease?.validForMs).toBeLessThanOrEqual(5_001);
    const renewed = await leases.renewAll('clock-a', [{ sessionId: session.id, fencingToken: lease!.fencingToken }], 5_000);
    expect(renewed.get(session.id)).toBeGreaterThan(4_000);
    expect(renewed.get(session.id)).toBeLessThanOrEqual(5_001);
  });

  it('does not hold a lease the database let expire when the wall clock was set back', async () => {
    const session = await startSession(createPrismaStores(database.prisma), newThread());
    const leases = createLeaseStore(database.prisma, database.pool);
    // The first holder's renewals fail (a database hiccup): what it knows of the lease is its claim.
    const failing: typeof leases = {
      ...leases,
      renewAll: async () => {
        throw new Error('the renewal did not reach the database');
      },
    };
    const ttlMs = 600;
    const first = new LeaseKeeper(failing, session.id, 'clock-first', ttlMs, log, true, new LeaseHeartbeat(failing, 'clock-first', ttlMs, log));
    expect(await first.claim()).not.toBe('refused');
    // The first holder's wall clock is set back an hour; the database's goes on.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() - 3_600_000);
    await new Promise((resolve) => setTimeout(resolve, ttlMs + 200));
    const second = new LeaseKeeper(leases, session.id, 'clock-second', 10_000, log);
    expect(await second.claim()).toBe('changed-hands');
    // The first holder asks the database instead of trusting its clock: refused, one holder.
    expect(await first.claim()).toBe('refused');
    await second.release();
  });
});
