// The Grafana dashboard and Prometheus alert rules in deploy/ reference only series Hippo exports
// (read from the registry /metrics serves, by its exposition text), with labels those series have,
// and the rule file is one Prometheus loads (JSON is YAML: its rule_files take it as it is).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { SessionRecord } from '../../src/core/store.js';
import { EventBus } from '../../src/core/events.js';
import { Metrics } from '../../src/metrics.js';

interface Series {
  labels: Set<string>;
}

/** Every series the registry exposes, from the text /metrics serves (histograms as _bucket, _sum, _count). */
async function exportedSeries(): Promise<Map<string, Series>> {
  const metrics = new Metrics({ events: new EventBus() });
  const text = await metrics.registry.metrics();
  const series = new Map<string, Series>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string];
    const labels = new Set<string>((metrics.registry.getSingleMetric(name) as unknown as { labelNames?: string[] } | undefined)?.labelNames ?? []);
    if (type === 'histogram') {
      series.set(`${name}_bucket`, { labels: new Set([...labels, 'le']) });
      series.set(`${name}_sum`, { labels });
      series.set(`${name}_count`, { labels });
    } else {
      series.set(name, { labels });
    }
  }
  return series;
}

const FUNCTIONS = new Set([
  'sum', 'max', 'min', 'avg', 'count', 'rate', 'irate', 'increase', 'histogram_quantile', 'clamp_min', 'clamp_max', 'abs', 'topk', 'bottomk', 'time', 'vector', 'scalar',
  'by', 'without', 'and', 'or', 'unless', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool',
]);
/** Labels Prometheus adds to every scraped series. */
const TARGET_LABELS = new Set(['instance', 'job']);

interface Reference {
  name: string;
  matchers: string[];
}

/** The series an expression reads, with the labels its matchers name, and its grouping labels. */
function parseExpression(raw: string): { references: Reference[]; grouping: string[] } {
  const expr = raw.replace(/\$__rate_interval|\$__range|\$__interval/g, '5m');
  // Brackets balance and every string closes.
  const stack: string[] = [];
  const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  let quoted = false;
  for (const char of expr) {
    if (char === '"') quoted = !quoted;
    if (quoted) continue;
    if ('([{'.includes(char)) stack.push(char);
    else if (char in pairs && stack.pop() !== pairs[char]) throw new Error(`unbalanced ${char} in ${raw}`);
  }
  if (quoted || stack.length > 0) throw new Error(`unclosed ${quoted ? 'string' : stack.join('')} in ${raw}`);
  const references: Reference[] = [];
  const grouping: string[] = [];
  for (const match of expr.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)) grouping.push(...match[1]!.split(',').map((label) => label.trim()).filter(Boolean));
  const stripped = expr.replace(/\b(?:by|without|on|ignoring)\s*\([^)]*\)/g, ' ').replace(/\[[^\]]*\]/g, ' ');
  for (const match of stripped.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{([^}]*)\})?/g)) {
    const name = match[1]!;
    const before = stripped.slice(0, match.index);
    if (/\{[^}]*$/.test(before) || /"[^"]*$/.test(before.replace(/"[^"]*"/g, ''))) continue; // inside a matcher or a string
    if (FUNCTIONS.has(name) || /^\d/.test(name)) continue;
    if (/^\s*\(/.test(stripped.slice(match.index + name.length))) throw new Error(`unknown function ${name} in ${raw}`);
    const matchers = [...(match[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"[^"]*"/g)].map((matcher) => matcher[1]!);
    references.push({ name, matchers });
  }
  return { references, grouping };
}

function checkExpression(expr: string, series: Map<string, Series>): string[] {
  const problems: string[] = [];
  const { references, grouping } = parseExpression(expr);
  if (references.length === 0) problems.push(`reads no series: ${expr}`);
  const labels = new Set<string>(TARGET_LABELS);
  for (const reference of references) {
    const known = series.get(reference.name);
    if (!known) {
      problems.push(`${reference.name} is not exported (${expr})`);
      continue;
    }
    for (const label of known.labels) labels.add(label);
    for (const matcher of reference.matchers) if (!known.labels.has(matcher)) problems.push(`${reference.name} has no label ${matcher}`);
  }
  for (const label of grouping) if (!labels.has(label)) problems.push(`no series of ${expr} has the label ${label}`);
  return problems;
}

const dashboard = JSON.parse(readFileSync('deploy/grafana-dashboard.json', 'utf8')) as {
  __inputs: Array<{ name: string; type: string }>;
  panels: Array<{ id: number; title: string; datasource: { uid: string }; targets: Array<{ expr: string; datasource: { uid: string } }> }>;
};
const alerts = JSON.parse(readFileSync('deploy/hippo-alerts.rules.json', 'utf8')) as {
  groups: Array<{ name: string; rules: Array<{ alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> }> }>;
};

describe('deploy/: dashboard and alerts', () => {
  it('the dashboard reads only exported series, by labels they have, through the imported data source', async () => {
    const series = await exportedSeries();
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource' })]);
    expect(new Set(dashboard.panels.map((panel) => panel.id)).size).toBe(dashboard.panels.length);
    const problems = dashboard.panels.flatMap((panel) => {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's own data-source placeholder, meant literally.
      expect(panel.datasource.uid).toBe('${DS_PROMETHEUS}');
      expect(panel.targets.length).toBeGreaterThan(0);
      return panel.targets.flatMap((target) => checkExpression(target.expr, series));
    });
    expect(problems).toEqual([]);
    // What the issue asks to see, each on the dashboard.
    const all = dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr)).join('\n');
    for (const name of ['hippo_runs_total', 'hippo_answers_total', 'hippo_model_cost_usd_total', 'hippo_model_tokens_total{kind="cached"}', 'hippo_memory_runs_total', 'hippo_context_resets_total', 'hippo_outbox_writes_total', 'hippo_ack_seconds_bucket', 'nodejs_eventloop_lag_p99_seconds']) {
      expect(all).toContain(name);
    }
  });

  it('the alert rules parse as a Prometheus rule file and read only exported series', async () => {
    const series = await exportedSeries();
    expect(alerts.groups).toHaveLength(1);
    const rules = alerts.groups[0]!.rules;
    expect(new Set(rules.map((rule) => rule.alert)).size).toBe(rules.length);
    for (const rule of rules) {
      expect(Object.keys(rule).every((key) => ['alert', 'expr', 'for', 'labels', 'annotations'].includes(key))).toBe(true);
      expect(rule.alert).toMatch(/^[A-Z][A-Za-z]+$/);
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smhd]$/);
      expect(rule.annotations['summary']).toEqual(expect.any(String));
      expect(rule.expr).toMatch(/[<>]=?|==/); // an alert compares
    }
    expect(rules.flatMap((rule) => checkExpression(rule.expr, series))).toEqual([]);
    expect(rules.map((rule) => rule.alert)).toEqual(expect.arrayContaining([
      'HippoModelEndpointFailing', 'HippoOutboxBacklogGrowing', 'HippoSpendOverDailyBudget', 'HippoNoMemoryRunSucceeding', 'HippoDatabaseUnreachable',
    ]));
  });

  it('the check itself refuses a series that is not exported, a label it lacks, and an unbalanced expression', async () => {
    const series = await exportedSeries();
    expect(checkExpression('sum(rate(hippo_model_calls_totl[5m]))', series)).toEqual(['hippo_model_calls_totl is not exported (sum(rate(hippo_model_calls_totl[5m])))']);
    expect(checkExpression('sum(rate(hippo_runs_total{role="worker"}[5m]))', series)).toEqual(['hippo_runs_total has no label role']);
    expect(checkExpression('sum by (kind) (rate(hippo_runs_total[5m]))', series)).toEqual(['no series of sum by (kind) (rate(hippo_runs_total[5m])) has the label kind']);
    expect(() => checkExpression('sum(rate(hippo_runs_total[5m])', series)).toThrow(/unclosed/);
  });

  it('counts answers by platform, resets by reason and the intake by outcome', async () => {
    const events = new EventBus();
    const metrics = new Metrics({ events });
    const session = { id: 's', platform: 'slack' } as SessionRecord;
    events.emit({ type: 'answer', session, text: 'hi', segmentId: 'g', seq: 3, fencingToken: 1, files: [] });
    events.emit({ type: 'context-reset', session, segmentId: 'g2', segmentOrdinal: 2, tokensBefore: 9, tokensAfter: 1, carriedMessages: 0, memoryCostUsd: null, reason: 'context-full' });
    events.emit({ type: 'context-reset', session, segmentId: 'g3', segmentOrdinal: 3, tokensBefore: 9, tokensAfter: 1, carriedMessages: 0, memoryCostUsd: null });
    const steers = metrics.instrumentIntake({ accept: async () => { throw new Error('database away'); } } as never);
    await expect(steers.accept({} as never)).rejects.toThrow('database away');
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^hippo_answers_total\{platform="slack"\} 1$/m);
    expect(text).toMatch(/^hippo_context_resets_total\{reason="context-full"\} 1$/m);
    expect(text).toMatch(/^hippo_context_resets_total\{reason="requested"\} 1$/m);
    expect(text).toMatch(/^hippo_ack_seconds_count\{outcome="error"\} 1$/m);
  });
});
