// Prints "N passed, N failed" alone on the last line: CI reads that line.
import type { Reporter, SerializedError, TestModule } from 'vitest/node';

export default class CountReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError> = []): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      let failedHere = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failedHere += 1;
        else skipped += 1;
      }
      // A file that failed to load, or whose beforeAll/afterAll failed (its tests then count as
      // skipped), must still count as a failure.
      if (module.state() === 'failed' && failedHere === 0) failedHere = 1;
      failed += failedHere;
    }
    // An error outside any test (a worker that ran out of memory, a rejection nobody awaited) fails
    // the run too, though the tests it cut short only count as skipped.
    failed += unhandledErrors.length;
    setImmediate(() => process.stdout.write(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`));
  }
}
