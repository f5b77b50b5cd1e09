// `npm run demo`: Hippo in a Slack workspace, with no account and no network. The real service runs
// against the project's fake Slack (test/fakes) and a local fake model, on an embedded database in a
// temporary folder; a few scripted people talk to it; then this prints what the team saw (status
// card, task cards, streamed answer, memory note with its buttons, App Home) and writes it as an HTML
// page drawn from the Block Kit Slack received.
//   npm run demo [-- --out FILE.html]      (default data/hippo-demo.html)
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { accountHtml, accountText, demoSurfaces } from './demo/demo-account.js';
import { runDemo } from './demo/run-demo.js';

const { values } = parseArgs({ options: { out: { type: 'string' }, 'database-url': { type: 'string' } } });
const out = resolve(values.out ?? 'data/hippo-demo.html');
const color = Boolean(process.stdout.isTTY) && !process.env['NO_COLOR'];

try {
  const recording = await runDemo({
    progress: (line) => process.stdout.write(`${line}\n`),
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
  });
  const surfaces = demoSurfaces(recording);
  process.stdout.write(`\nWhat the team saw in the thread, in order:\n\n${accountText(surfaces, color)}\n\n`);
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, accountHtml(surfaces));
  process.stdout.write(`The same as a page drawn from the recorded Block Kit: ${out}\n`);
  process.exit(0);
} catch (error) {
  process.stderr.write(`demo: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
