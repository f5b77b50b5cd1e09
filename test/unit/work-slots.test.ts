// WorkSlots: the per-process limit on runners orchestrating at once (core/runner/work-slots.ts).
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { WorkSlots } from '../../src/core/runner/work-slots.js';
import { gate } from '../support/model-script.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('WorkSlots', () => {
  it('lets `size` holders work at once and the rest in arrival order', async () => {
    const slots = new WorkSlots(2);
    const order: string[] = [];
    const gates = [gate(), gate(), gate(), gate()];
    const runs = ['a', 'b', 'c', 'd'].map((name, index) =>
      slots.run(async () => {
        order.push(`start ${name}`);
        await gates[index]!.promise;
        order.push(`end ${name}`);
      }),
    );
    await tick();
    expect(order).toEqual(['start a', 'start b']);
    expect(slots.waiting).toBe(2);
    gates[1]!.open();
    await tick();
    expect(order).toEqual(['start a', 'start b', 'end b', 'start c']);
    gates[0]!.open();
    gates[2]!.open();
    gates[3]!.open();
    await Promise.all(runs);
    expect(order.filter((entry) => entry.startsWith('start'))).toEqual(['start a', 'start b', 'start c', 'start d']);
    expect(slots.waiting).toBe(0);
  });

  it('gives the slot back while a holder waits outside it, and takes one again after', async () => {
    const slots = new WorkSlots(1);
    const model = gate();
    const events: string[] = [];
    const first = slots.run(async () => {
      events.push('first works');
      await slots.outside(async () => {
        events.push('first waits on the model');
        await model.promise;
      });
      events.push('first works again');
    });
    const second = slots.run(async () => {
      events.push('second works');
    });
    await tick();
    // The second ran while the first waited; the first came back after it.
    expect(events).toEqual(['first works', 'first waits on the model', 'second works']);
    model.open();
    await Promise.all([first, second]);
    expect(events.at(-1)).toBe('first works again');
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new WorkSlots(0)).toThrow(new ConfigError('work slots: size must be a positive integer, got 0'));
  });
});
