// R21's counter: a run's steps are the session's worker calls since the run began; the limit is
// reached at exactly RUN_MAX_STEPS; the note is emitted again only for a session paused at it.
import { describe, expect, it } from 'vitest';
import { defaultAgentSettings, type AgentSettings } from '../../src/core/agent-context.js';
import { EventBus, type AgentEvent } from '../../src/core/events.js';
import { runSteps, StepLimit } from '../../src/core/runner/step-limit.js';
import type { Log } from '../../src/core/log.js';
import type { SessionRecord } from '../../src/core/store.js';

const session: SessionRecord = {
  id: 's1', platform: 'console', workspaceId: 'local', channelId: 'c', threadKey: 't', memorySpaceId: 'm', title: '',
  startedBy: null, pauseRequested: false, paused: false, resetRequested: false, currentSegmentId: null, budgetUsd: null, stopRequestedBy: null,
  workerSteps: 0, runStartStep: 0,
};

function limit(runMaxSteps: number): { steps: StepLimit; events: AgentEvent[] } {
  const events: AgentEvent[] = [];
  const bus = new EventBus();
  bus.subscribe((event) => events.push(event));
  const settings: AgentSettings = { ...defaultAgentSettings, model: 'm', contextWindow: 1_000, runMaxSteps };
  const silent: Log = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined, child: () => silent };
  return { steps: new StepLimit({ settings, events: bus, log: silent }), events };
}

describe('runSteps', () => {
  it('counts the worker calls since the run began, never below zero', () => {
    expect(runSteps({ workerSteps: 57, runStartStep: 50 })).toBe(7);
    expect(runSteps({ workerSteps: 50, runStartStep: 50 })).toBe(0);
    expect(runSteps({ workerSteps: 3, runStartStep: 5 })).toBe(0);
  });
});

describe('StepLimit', () => {
  it('is reached at exactly RUN_MAX_STEPS steps of the run, whatever came before it', () => {
    const { steps } = limit(4);
    expect(steps.reached({ workerSteps: 13, runStartStep: 10 })).toBe(false);
    expect(steps.reached({ workerSteps: 14, runStartStep: 10 })).toBe(true);
    expect(steps.reached({ workerSteps: 15, runStartStep: 10 })).toBe(true);
  });

  it('tells the thread the run stopped, naming the stop by the session\'s step count', () => {
    const { steps, events } = limit(4);
    steps.stopped({ ...session, paused: true, workerSteps: 14, runStartStep: 10 });
    expect(events).toEqual([expect.objectContaining({ type: 'step-limit', steps: 4, maxSteps: 4, sessionSteps: 14 })]);
  });

  it('emits the note again only for a session paused at the limit', () => {
    const { steps, events } = limit(4);
    expect(steps.redeliver({ ...session, paused: false, workerSteps: 4 })).toBe(false);
    expect(steps.redeliver({ ...session, paused: true, workerSteps: 3 })).toBe(false);
    expect(steps.redeliver({ ...session, paused: true, workerSteps: 9, runStartStep: 5 })).toBe(true);
    expect(events).toEqual([expect.objectContaining({ type: 'step-limit', steps: 4, sessionSteps: 9 })]);
  });
});
