// The deterministic texts of the benchmark workloads, shared by the agent side (tool output) and
// the fake model process (memory documents, compaction summaries): same bytes on every run.

/** The long task of B1, as the person asks for it. */
export const longTask = 'Please migrate the billing service to the new event store, step by step: run every migration step with run_step, check its log, and tell me when all steps are done.';

/** A small deterministic pseudo-random generator (LCG), seeded per use. */
export function random(seed: number): () => number {
  let state = (seed * 2654435761) >>> 0 || 1;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * Tool output size of step `step` in characters: between 0.25× and 1.75× of `meanChars`,
 * mean `meanChars` (≈ meanChars/4 tokens).
 */
export function stepOutputChars(step: number, meanChars: number): number {
  const next = random(step * 7 + 3);
  return Math.round(meanChars * (0.25 + 1.5 * next()));
}

const verbs = ['copied', 'verified', 'rewrote', 'indexed', 'skipped', 'replayed', 'checked', 'migrated'];
const things = ['invoice events', 'payment intents', 'ledger rows', 'refund records', 'customer balances', 'tax lines', 'webhook logs', 'dunning notices'];

/** The log of one migration step: plausible, unique lines, about `chars` characters long. */
export function stepLog(step: number, part: number, chars: number): string {
  const next = random(step * 31 + part);
  const lines = [`$ migrate --step ${step}${part > 1 ? ` --part ${part}` : ''}`];
  let length = lines[0]?.length ?? 0;
  for (let line = 1; length < chars; line += 1) {
    const verb = verbs[Math.floor(next() * verbs.length)] ?? 'checked';
    const thing = things[Math.floor(next() * things.length)] ?? 'rows';
    const rows = Math.floor(next() * 100_000);
    const millis = Math.floor(next() * 900) + 10;
    const text = `[step ${step}.${part} #${line}] ${verb} ${rows} ${thing} in shard ${Math.floor(next() * 64)} (${millis} ms, checksum ${Math.floor(next() * 0xffffff).toString(16)})`;
    lines.push(text);
    length += text.length + 1;
  }
  lines.push(`step ${step}${part > 1 ? ` part ${part}` : ''} finished: ok`);
  return lines.join('\n');
}

/** MAIN.md as the scripted summarizer writes it after seeing `steps` steps: about `chars` long. */
export function mainDocument(steps: number, chars: number): string {
  const head = [
    '# Memory',
    '',
    '## Billing migration (current task)',
    '- Goal: move the billing service to the new event store, one run_step per migration step.',
    `- Progress: steps 1–${steps} done as far as this summary knows; each step logs copied/verified rows per shard.`,
    '- Decisions: keep shards in order; re-run a step only when its log does not end with "finished: ok".',
    '',
    '## Step notes',
  ];
  const lines = [...head];
  let length = lines.join('\n').length;
  for (let step = steps; step >= 1 && length < chars; step -= 1) {
    const line = `- step ${step}: finished ok; ${things[step % things.length]} moved, checksums recorded in the step log.`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n') + '\n';
}

/** The step lines an edit-style summary appends for steps after `from` up to `to`. */
export function stepNotes(from: number, to: number): string {
  const lines: string[] = [];
  for (let step = to; step > from; step -= 1) lines.push(`- step ${step}: finished ok; ${things[step % things.length]} moved, checksums recorded in the step log.`);
  return lines.length ? lines.join('\n') : `- steps up to ${to}: nothing new`;
}

/** A compaction summary (blocking baseline) of about `chars` characters. */
export function compactionSummary(stepsDone: number, chars: number): string {
  const lines = [
    '## Summary of the work so far (handoff)',
    `The user asked to migrate the billing service to the new event store. Steps 1–${stepsDone} were run with run_step and finished ok.`,
    'Remaining: continue with the next step, check each log ends with "finished: ok", report when all steps are done.',
    '',
  ];
  let length = lines.join('\n').length;
  for (let step = stepsDone; step >= 1 && length < chars; step -= 1) {
    const line = `- step ${step}: ${things[step % things.length]} migrated; ${verbs[step % verbs.length]}; no errors; shard order kept.`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n');
}

/** The person's message that asks the chat scenario for `steps` tool steps before the answer. */
export function chatMessage(turn: number, steps: number): string {
  return `Turn ${turn}: please check the status (steps=${steps}).`;
}
