// R3 as shipped: the agent built from the service's configuration defaults (src/config.ts, not the
// core's own defaults) forks a decider with every summarizer, the original design's rhythm.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildAgent } from '../../src/build-agent.js';
import { parseConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { at, scriptRoles } from '../support/model-script.js';
import { newThread, personMessage } from '../support/agent-harness.js';
import { useTestBed } from '../support/test-bed.js';

const bed = useTestBed();

describe('the shipped memory defaults (R3)', () => {
  it('fork a decider with every summarizer, from the first step on', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hippo-defaults-'));
    bed.onCleanup(() => rm(dataDir, { recursive: true, force: true }));
    const parsed = parseConfig({ MODEL: 'fake-model', OPENAI_BASE_URL: bed.model.url, OPENAI_API_KEY: 'test-key', MODEL_CONTEXT_WINDOW: '20000', TOOLS: 'memory', DATA_DIR: dataDir });
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    const built = await buildAgent({ config: parsed.config, database: bed.database, log: createLogger('silent'), environment: {} });
    bed.onCleanup(async () => {
      await built.agent.stop(1_000);
      await built.close();
    });
    // Each worker call grows the context by 4% of the window (more than a step of 3%), well below
    // the economy floor of 50%. Forks go when the worker's next call starts streaming; that stream
    // takes about a second, so the forks (answering at once) end before the next step.
    const calls = 8;
    scriptRoles(bed.model, {
      worker: Array.from({ length: calls + 1 }, (_, index) => (index < calls
        ? at(1_000 + index * 800, { content: 'listing the memory', chunkDelayMs: 150, toolCalls: [{ id: `list${index}`, name: 'memory_list', arguments: {} }] })
        : at(1_000 + index * 800, { content: 'listed' }))),
    });
    const { session } = await built.agent.submit(personMessage(newThread(), 'list the memory, again and again'), { startSession: true });
    const runner = await built.agent.runner(session!.id);
    await runner.whenIdle();
    await runner.memory.settle();
    const runs = await bed.database.prisma.memoryRun.findMany({ where: { sessionId: session!.id }, orderBy: { startedAt: 'asc' } });
    const summarizers = runs.filter((run) => run.role === 'summarizer');
    const deciders = runs.filter((run) => run.role === 'decider');
    expect(summarizers.length).toBeGreaterThanOrEqual(3);
    // Every summarizer has its decider, forked right after its marker (it sees the marker).
    // (A decider may also fork at a step where an earlier summarizer still runs.)
    expect(deciders.map((run) => run.forkPoint)).toEqual(expect.arrayContaining(summarizers.map((run) => run.forkPoint + 1)));
  }, 60_000);
});
