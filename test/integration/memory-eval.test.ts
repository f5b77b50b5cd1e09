// A smoke test of `npm run eval:memory` (scripts/memory-eval.ts) against the fake model: it checks
// the harness (the conversation runs, resets happen, the report adds up), not a model's quality.
import { describe, expect, it } from 'vitest';
import { evalFacts, runMemoryEval } from '../../scripts/memory-eval.js';
import { lastMessageText, type FakeRequestBody } from '../fakes/fake-model-server.js';
import { roleOf } from '../support/model-script.js';
import { useTestBed } from '../support/test-bed.js';

const bed = useTestBed();

const text = (body: FakeRequestBody, upTo = body.messages.length) => body.messages.slice(0, upTo).map((message) => (typeof message['content'] === 'string' ? message['content'] : '')).join('\n');

describe('the memory eval (smoke, fake model)', () => {
  it('runs the scripted conversation through resets and reports recall, resets, cost by role and cache ratio', async () => {
    const window = 16_000;
    bed.model.setContextWindow(window);
    bed.onCleanup(async () => bed.model.setContextWindow(undefined));
    bed.model.respond((body) => {
      const role = roleOf(body);
      if (role === 'decider') return { content: 'Still relevant.\nKEEP_CONTEXT' };
      if (role === 'summarizer') {
        // A fake summarizer that saves the facts once it sees them (and MAIN.md lacks them).
        const instruction = lastMessageText(body);
        const seen = text(body);
        const facts = evalFacts.map((fact) => fact.statement);
        if (!seen.includes(facts[0]!)) return { content: 'no change' };
        const version = Number(/version (\d+)/.exec(instruction)?.[1] ?? 1);
        return { toolCalls: [
          { id: 'append', name: 'memory_append', arguments: { path: 'MAIN.md', text: facts.map((fact) => `- ${fact}`).join('\n'), expected_version: version } },
          { id: 'done', name: 'memory_done', arguments: { note: 'saved the project facts' } },
        ] };
      }
      const last = lastMessageText(body);
      if (last.includes('Please remember these facts')) return { content: 'Noted.' };
      if (last.includes('ERROR lines')) return { content: 'A few ERROR lines.' };
      // A question: answered from what the context (memory documents included) still holds.
      const fact = evalFacts.find((candidate) => last.includes(candidate.question));
      const known = fact && text(body, body.messages.length - 1).includes(fact.statement);
      return { content: known ? fact.statement : 'I do not know.' };
    });
    const report = await runMemoryEval({ baseUrl: bed.model.url, model: 'fake-model', contextWindow: window, tasks: 5, database: bed.database, answerTimeoutMs: 120_000 });
    expect(report.questions).toHaveLength(evalFacts.length);
    expect(report.recall).toBe(1);
    expect(report.resets.forced).toBeGreaterThanOrEqual(1);
    expect(report.resets.decided).toBe(0);
    expect(report.refusedOrFailed).toBe(0);
    expect(Object.keys(report.costByRole).sort()).toEqual(['decider', 'summarizer', 'worker']);
    expect(report.costByRole['worker']?.calls).toBeGreaterThanOrEqual(1 + 5 + evalFacts.length);
    expect(report.cacheRatio).toBeGreaterThanOrEqual(0);
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
    expect(bed.model.refused).toHaveLength(0);
  }, 240_000);
});
