// Runs every available benchmark in sequence, prints a table per benchmark and appends the results
// (date, CPU, Node, commit) to the day's file in bench/history/ (bench/RESULTS.md keeps the current table).
//   npx tsx bench/run.ts                 all benchmarks (about 10 minutes on 2 cores)
//   BENCH_ONLY=b1,b3 npx tsx bench/run.ts  a subset
// Knobs: BENCH_SCALE (B1 latency scale), BENCH_B1_*, BENCH_B2_*, BENCH_B3_*, BENCH_B4_* (see each file),
// BENCH_APPEND=0 (do not append), BENCH_QUIET_WAIT_S (wait up to this long for a quiet machine
// before each benchmark; default 60, 0 = never wait).
import { cpus, loadavg } from 'node:os';
import { b1 } from './b1-memory.js';
import { b2 } from './b2-overhead.js';
import { b3 } from './b3-scale.js';
import { b4 } from './b4-slack-ingest.js';
import { appendResults, printReport, runEnvironment, type BenchReport, type Benchmark } from './support/report.js';
import { envNumber, sleep } from './support/stats.js';

/** Every benchmark, in the order they run. */
const benchmarks: Array<Benchmark | { id: string; title: string; run: null }> = [
  b1,
  b2,
  b3,
  b4,
];

/** Waits until the 1-minute load average is below the core count, for up to `maxSeconds`. */
async function waitForQuietMachine(maxSeconds: number): Promise<void> {
  const cores = cpus().length;
  const deadline = Date.now() + maxSeconds * 1000;
  let warned = false;
  while ((loadavg()[0] ?? 0) >= cores && Date.now() < deadline) {
    if (!warned) console.error(`load average ${(loadavg()[0] ?? 0).toFixed(2)} ≥ ${cores} cores: waiting up to ${maxSeconds} s for a quieter machine…`);
    warned = true;
    await sleep(5_000);
  }
}

async function main(): Promise<void> {
  const only = process.env['BENCH_ONLY']?.split(',').map((id) => id.trim().toLowerCase());
  const quietWait = envNumber('BENCH_QUIET_WAIT_S', 60);
  const environment = runEnvironment();
  const reports: BenchReport[] = [];
  const started = Date.now();
  for (const benchmark of benchmarks) {
    if (only && !only.includes(benchmark.id)) continue;
    if (!benchmark.run) {
      console.log(`\n=== ${benchmark.id.toUpperCase()} ${benchmark.title}: not implemented yet (slot reserved) ===`);
      continue;
    }
    if (quietWait > 0) await waitForQuietMachine(quietWait);
    let report: BenchReport;
    try {
      report = await benchmark.run();
    } catch (error) {
      // One failing benchmark must not lose the others' results.
      console.error(error);
      report = { id: benchmark.id, title: benchmark.title, settings: {}, tables: [], targets: [], notes: [`FAILED: ${error instanceof Error ? error.stack ?? error.message : String(error)}`] };
    }
    printReport(report);
    reports.push(report);
  }
  console.log(`\nall benchmarks finished in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (reports.length && process.env['BENCH_APPEND'] !== '0') {
    console.log(`appended to ${await appendResults(reports, environment)}`);
  }
}

try {
  await main();
  process.exit(0);
} catch (error) {
  console.error(error);
  process.exit(1);
}
