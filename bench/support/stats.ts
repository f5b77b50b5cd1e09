// Small numeric helpers shared by the benchmarks, and reading knobs from the environment.

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((left, right) => left - right);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

export function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** `value` with `digits` decimals, or "–" when it is not a number. */
export function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

/** A ratio as a percentage string. */
export function percent(part: number, whole: number, digits = 1): string {
  return whole > 0 ? `${((part * 100) / whole).toFixed(digits)}%` : '–';
}

/** Thousands separators, for token counts. */
export function count(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A numeric knob from the environment (benchmarks only; the product reads config once). */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`${name} must be a number, got "${raw}"`);
  return value;
}

/** A comma-separated list of numbers from the environment. */
export function envNumbers(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  return raw.split(',').map((part) => {
    const value = Number(part.trim());
    if (!Number.isFinite(value)) throw new Error(`${name} must be numbers separated by commas, got "${raw}"`);
    return value;
  });
}

/** Polls `condition` every `intervalMs` until it holds; throws after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string, intervalMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
