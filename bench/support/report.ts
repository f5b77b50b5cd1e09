// What every benchmark returns, how it is printed, and how it is appended to bench/history/
// with the machine and commit it ran on.
import { execFileSync } from 'node:child_process';
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** One table of a report: the first column names the row. */
export interface Table {
  title: string;
  columns: string[];
  rows: Array<Array<string | number>>;
}

/** A target from the issue and whether this run reached it. */
export interface TargetCheck {
  target: string;
  measured: string;
  met: boolean;
}

/** The result of one benchmark run. */
export interface BenchReport {
  id: string;
  title: string;
  /** The knobs this run used (scale factors, sizes), shown above its tables. */
  settings: Record<string, string | number>;
  tables: Table[];
  targets: TargetCheck[];
  /** Observations worth keeping next to the numbers. */
  notes: string[];
  /** Lines a script reads ("B1 summary: cost_ratio=…"), printed last. */
  summaryLines?: string[];
}

/** A benchmark as bench/run.ts sees it. */
export interface Benchmark {
  id: string;
  title: string;
  run(): Promise<BenchReport>;
}

/** The repository root (bench/ is one level below it). */
export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Where a run's full report goes: one file per UTC day under bench/history (RESULTS.md keeps the current table). */
export function historyPath(date = new Date()): string {
  return fileURLToPath(new URL(`../history/${date.toISOString().slice(0, 10)}.md`, import.meta.url));
}

/** Where and on what a run happened. */
export interface RunEnvironment {
  date: string;
  cpu: string;
  cores: number;
  node: string;
  commit: string;
  /** 1-minute load average when the run started (other processes compete for the CPU). */
  load: number;
}

export function runEnvironment(): RunEnvironment {
  const processors = cpus();
  return {
    date: new Date().toISOString().replace('T', ' ').slice(0, 16) + ' UTC',
    cpu: processors[0]?.model.trim() ?? 'unknown CPU',
    cores: processors.length,
    node: process.version,
    commit: gitCommit(),
    load: loadavg()[0] ?? 0,
  };
}

// Other engineers edit src/ concurrently: say so when the measured code is not the commit alone.
function gitCommit(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'prisma', 'bench', ':(exclude)bench/RESULTS.md', ':(exclude)bench/history'], { cwd: repoRoot, encoding: 'utf8' }).trim();
    return dirty ? `${commit} (+ uncommitted changes in src/, prisma/ or bench/)` : commit;
  } catch {
    return 'unknown';
  }
}

/** A fixed-width text table for the terminal. */
export function textTable(table: Table): string {
  const cells = [table.columns, ...table.rows.map((row) => row.map(String))];
  const widths = table.columns.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  ');
  return [table.title, line(table.columns), widths.map((width) => '-'.repeat(width)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export function markdownTable(table: Table): string {
  const escapeCell = (cell: string | number) => String(cell).replaceAll('|', '\\|');
  return [
    `**${table.title}**`,
    '',
    `| ${table.columns.map(escapeCell).join(' | ')} |`,
    `| ${table.columns.map((_, column) => (column === 0 ? '---' : '---:')).join(' | ')} |`,
    ...table.rows.map((row) => `| ${row.map(escapeCell).join(' | ')} |`),
  ].join('\n');
}

function settingsLine(settings: BenchReport['settings']): string {
  return Object.entries(settings).map(([key, value]) => `${key}=${value}`).join(', ');
}

/** The report as terminal text. */
export function printReport(report: BenchReport): void {
  const parts = [`\n=== ${report.id.toUpperCase()} ${report.title} ===`, `settings: ${settingsLine(report.settings)}`];
  for (const table of report.tables) parts.push('', textTable(table));
  if (report.targets.length) {
    parts.push('', 'targets:');
    for (const check of report.targets) parts.push(`  [${check.met ? 'met' : 'MISSED'}] ${check.target}: ${check.measured}`);
  }
  if (report.notes.length) parts.push('', 'notes:', ...report.notes.map((note) => `  - ${note}`));
  if (report.summaryLines?.length) parts.push('', ...report.summaryLines);
  console.log(parts.join('\n'));
}

/** The report as a Markdown section (level-3 heading). */
export function markdownReport(report: BenchReport): string {
  const parts = [`### ${report.id.toUpperCase()} ${report.title}`, '', `Settings: ${settingsLine(report.settings)}`];
  for (const table of report.tables) parts.push('', markdownTable(table));
  if (report.targets.length) {
    parts.push('', 'Targets:', '');
    for (const check of report.targets) parts.push(`- ${check.met ? '✅' : '❌'} ${check.target}: ${check.measured}`);
  }
  if (report.notes.length) parts.push('', 'Notes:', '', ...report.notes.map((note) => `- ${note}`));
  if (report.summaryLines?.length) parts.push('', '```', ...report.summaryLines, '```');
  return parts.join('\n');
}

/** Appends one run (one or more benchmarks) to the day's file in bench/history. */
export async function appendResults(reports: BenchReport[], environment = runEnvironment()): Promise<string> {
  const heading = `## ${environment.date} · ${reports.map((report) => report.id.toUpperCase()).join(', ')} · commit ${environment.commit}`;
  const machine = `${environment.cpu}, ${environment.cores} cores · Node ${environment.node} · 1-min load average ${environment.load.toFixed(2)} at start, ${(loadavg()[0] ?? 0).toFixed(2)} at end`;
  const body = [heading, '', machine, '', ...reports.flatMap((report) => [markdownReport(report), ''])].join('\n');
  const path = historyPath();
  await mkdir(dirname(path), { recursive: true });
  await appendFile(path, `\n${body}`);
  return path;
}

/** True when `moduleUrl` is the script node was started with (run alone, not imported). */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && pathToFileURL(entry).href === moduleUrl;
}

/** Runs one benchmark as a script: print, append to bench/history (unless BENCH_APPEND=0), exit. */
export async function runAlone(benchmark: Benchmark): Promise<void> {
  try {
    const environment = runEnvironment();
    const report = await benchmark.run();
    printReport(report);
    if (process.env['BENCH_APPEND'] !== '0') {
      console.error(`\nappended to ${await appendResults([report], environment)}`);
    }
    process.exit(0);
  } catch (error) {
    console.error(error);
    process.exit(1);
  }
}
