// Hostile HTML (issue #15): how HTML → text converters behave on pages built to hurt them.
// Each candidate converts each page in a fresh child process (heap capped at 1 GiB, 30 s limit),
// so one that runs out of memory or time is reported as such instead of ending the benchmark.
//
// Run: npx tsx bench/hostile-html.ts            (prints a Markdown table and the machine)
// Candidates: hippo (src/tools/html-to-text.ts: htmlparser2 Tokenizer + bounded writer), hand
// (the pre-#15 regex scanner fixed, same writer: bench/support/hand-html-to-text.ts), parser
// (htmlparser2's Parser + the same writer), html-to-text, node-html-parser, and legacy (the
// code before #15, read from git at LEGACY_COMMIT).
import { execFileSync, spawnSync } from 'node:child_process';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const LEGACY_COMMIT = '921c565';
const MiB = 1024 * 1024;
const repeat = (unit: string, bytes = 2 * MiB): string => unit.repeat(Math.ceil(bytes / unit.length));

/** A page that looks like a real article: chrome, headings, paragraphs with links, a list, code, a table. */
function article(): string {
  const paragraph = (index: number): string =>
    `<p>Paragraph ${index} of the article explains <a href="/docs/${index}">a linked idea</a> with <b>bold</b> and <em>emphasis</em>, &ldquo;quotes&rdquo; &amp; entities.</p>`;
  const sections = Array.from({ length: 60 }, (_, index) =>
    `<section><h2>Section ${index}</h2>${[1, 2, 3].map((n) => paragraph(index * 3 + n)).join('')}<ul><li>point one</li><li>point two <a href="#x">anchor</a></li></ul><pre><code>const x = ${index};\n</code></pre><table><tr><th>a</th><th>b</th></tr><tr><td>${index}</td><td>2</td></tr></table></section>`,
  ).join('\n');
  return `<!doctype html><html><head><title>An article</title><script>var a="</div>";</script><style>p{}</style></head><body><nav><a href="/">Home</a></nav><main><article><h1>Title</h1>${sections}</article></main><footer>© 2026</footer></body></html>`;
}

/** The hostile pages (about 2 MiB each) and the real-looking one. */
const pages: Record<string, () => string> = {
  'nested <ul><li> 2 MiB': () => repeat('<ul><li>x'),
  'nested <div> 2 MiB': () => repeat('<div>x'),
  'unclosed <title> ×, 2 MiB': () => repeat('<title>'),
  '<a href=" unclosed, 2 MiB': () => repeat('<a href="x>y</a>'),
  '&amp; 2 MiB': () => repeat('&amp;'),
  'nested tables 2 MiB': () => repeat('<table><tr><td>'),
  'article ~100 KiB': article,
};

type Convert = (html: string) => Promise<number>;

/** Loads a candidate; the number it returns is the length of the text produced. */
async function candidate(name: string): Promise<Convert> {
  if (name === 'hippo') {
    const { convertHtml } = await import('../src/tools/html-to-text.js');
    return async (html) => convertHtml(html).text.length;
  }
  if (name === 'hand') {
    const { handConvertHtml } = await import('./support/hand-html-to-text.js');
    return async (html) => handConvertHtml(html).text.length;
  }
  if (name === 'parser') {
    const { Parser } = await import('htmlparser2');
    const { HtmlTextWriter } = await import('../src/tools/html-text-writer.js');
    return async (html) => {
      const writer = new HtmlTextWriter(undefined, { maxChars: 2_000_000, maxIndentLevels: 6 });
      const parser = new Parser({
        onopentag: (tag, attributes) => writer.open(tag, { ...(attributes['href'] ? { href: attributes['href'] } : {}), ...(attributes['alt'] ? { alt: attributes['alt'] } : {}) }, false),
        onclosetag: (tag) => writer.close(tag),
        ontext: (text) => writer.text(text),
      }, { decodeEntities: true });
      parser.end(html);
      return writer.result().length;
    };
  }
  if (name === 'html-to-text') {
    const { convert } = await import('html-to-text');
    return async (html) => convert(html, { wordwrap: false }).length;
  }
  if (name === 'node-html-parser') {
    const { parse } = await import('node-html-parser');
    return async (html) => parse(html).structuredText.length;
  }
  if (name === 'legacy') {
    const source = execFileSync('git', ['show', `${LEGACY_COMMIT}:src/tools/html-to-text.ts`], { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' });
    const file = join(tmpdir(), `hippo-legacy-html-to-text-${process.pid}.ts`);
    writeFileSync(file, source);
    const legacy = (await import(pathToFileURL(file).href)) as { htmlToText(html: string): string; htmlTitle(html: string): string | undefined };
    // web_fetch called both.
    return async (html) => legacy.htmlToText(html).length + (legacy.htmlTitle(html)?.length ?? 0);
  }
  throw new Error(`unknown candidate ${name}`);
}

/** Child: converts one page with one candidate; prints JSON {ms, rssGrowthMiB, chars}. */
async function child(candidateName: string, pageName: string): Promise<void> {
  const make = pages[pageName];
  if (!make) throw new Error(`unknown page ${pageName}`);
  const convert = await candidate(candidateName);
  const html = make();
  await convert('<p>warm up</p>');
  const rssBefore = process.resourceUsage().maxRSS;
  const started = performance.now();
  const chars = await convert(html);
  const ms = performance.now() - started;
  const rssGrowthMiB = (process.resourceUsage().maxRSS - rssBefore) / 1024;
  process.stdout.write(JSON.stringify({ ms, rssGrowthMiB, chars }));
}

const CANDIDATES = ['hippo', 'hand', 'parser', 'html-to-text', 'node-html-parser', 'legacy'];

async function main(): Promise<void> {
  const self = fileURLToPath(import.meta.url);
  const rows: string[][] = [];
  for (const pageName of Object.keys(pages)) {
    const row = [pageName];
    for (const name of CANDIDATES) {
      const run = spawnSync(process.execPath, ['--max-old-space-size=1024', '--import', 'tsx', self, '--child', name, pageName], { encoding: 'utf8', timeout: 30_000 });
      let cell: string;
      if (run.error && (run.error as NodeJS.ErrnoException).code === 'ETIMEDOUT') cell = '> 30 s (killed)';
      else if (run.status !== 0) cell = /heap out of memory|Allocation failed/.test(run.stderr) ? `heap exhausted (${run.signal ?? `exit ${run.status}`})` : `failed (${run.signal ?? `exit ${run.status}`})`;
      else {
        const { ms, rssGrowthMiB } = JSON.parse(run.stdout) as { ms: number; rssGrowthMiB: number; chars: number };
        cell = `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms · +${Math.round(rssGrowthMiB)} MiB`;
      }
      row.push(cell);
      process.stderr.write(`${pageName} · ${name}: ${cell}\n`);
    }
    rows.push(row);
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(`Machine: ${cpus().length} × ${cpu}, Node ${process.version}, load average ${loadavg().map((value) => value.toFixed(1)).join(' ')}\n`);
  console.log(`| page | ${CANDIDATES.join(' | ')} |`);
  console.log(`| --- | ${CANDIDATES.map(() => '---').join(' | ')} |`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  console.log('\nEach cell: conversion time · growth of peak RSS (fresh process per cell, heap capped at 1 GiB).');
}

const childIndex = process.argv.indexOf('--child');
if (childIndex !== -1) await child(process.argv[childIndex + 1] ?? '', process.argv[childIndex + 2] ?? '');
else await main();
