// An MCP tool's image reaches a model that accepts images as an image part, after the results of
// its batch (a tool result carries text only), and is only described to one that does not.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { McpToolSource } from '../../src/tools/mcp.js';
import { newThread, personMessage } from '../support/agent-harness.js';
import { conversation, shape } from '../support/model-script.js';
import { repoRoot } from '../support/processes.js';
import { useTestBed } from '../support/test-bed.js';

const bed = useTestBed();
let source: McpToolSource;
let directory: string;

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'hippo-mcp-images-'));
  const configPath = path.join(directory, 'mcp.json');
  await writeFile(configPath, JSON.stringify({ mcpServers: {
    echo: { command: process.execPath, args: ['--import', 'tsx', path.join(repoRoot, 'test/fakes/mcp-echo-server.ts')], cwd: repoRoot },
    pictures: { command: process.execPath, args: ['--import', 'tsx', path.join(repoRoot, 'test/fakes/mcp-picture-server.ts')], cwd: repoRoot },
  } }));
  source = await McpToolSource.start({ configPath, log: createLogger('silent') });
});
afterAll(async () => {
  await source.close();
  await rm(directory, { recursive: true, force: true });
});

describe('MCP images', () => {
  it('shows the image after the batch\'s results to a model that accepts images', async () => {
    const harness = await bed.harness({ tools: source.tools(), settings: { images: true } });
    bed.model.enqueue({ toolCalls: [{ id: 'p1', name: 'echo__picture', arguments: {} }, { id: 'e1', name: 'echo__echo', arguments: { text: 'after' } }] }, { content: 'A red dot.' });
    await harness.agent.submit(personMessage(newThread(), 'what is in the picture?'), { startSession: true });
    await harness.waitForEvent('answer');
    const second = bed.model.requests[1]!.body;
    expect(shape(conversation(second))).toEqual(['user:what is in the picture?', 'assistant→[p1,e1]', 'tool(p1)', 'tool(e1)', 'user:']);
    const images = conversation(second).at(-1)?.['content'] as Array<Record<string, unknown>>;
    expect(String(images[0]?.['text'])).toMatch(/^<tool-images note="[^"]+">\n1\. image\/png, 70 B, from call p1 \(echo__picture\)\n<\/tool-images>$/);
    expect(images[1]).toEqual({ type: 'image_url', image_url: { url: expect.stringMatching(/^data:image\/png;base64,iVBOR/) } });
    expect(String(conversation(second)[2]?.['content'])).toContain('[image image/png, 70 B, shown after the tool results]');
  });

  it('names an image whose bytes are not the image they claim instead of sending it (R22), and the model answers', async () => {
    const harness = await bed.harness({ tools: source.tools(), settings: { images: true } });
    bed.model.enqueue({ toolCalls: [{ id: 'f1', name: 'pictures__fake_picture', arguments: {} }] }, { content: 'It is not a picture.' });
    await harness.agent.submit(personMessage(newThread(), 'show me the chart'), { startSession: true });
    await harness.waitForEvent('answer');
    expect(bed.model.imageRefused).toHaveLength(0);
    const second = bed.model.requests[1]!;
    expect(second.rawBody).not.toContain('image_url');
    expect(String(conversation(second.body).at(-1)?.['content'])).toMatch(/^<tool-images note="[^"]+">\n1\. image\/png, 27 B, from call f1 \(pictures__fake_picture\): not shown, its bytes are not a valid image\n<\/tool-images>$/);
  });

  it('describes the image to a model that does not accept images', async () => {
    const harness = await bed.harness({ tools: source.tools(), settings: { images: false } });
    bed.model.enqueue({ toolCalls: [{ id: 'p2', name: 'echo__picture', arguments: {} }] }, { content: 'Cannot see it.' });
    await harness.agent.submit(personMessage(newThread(), 'and now?'), { startSession: true });
    await harness.waitForEvent('answer');
    const second = bed.model.requests[1]!;
    expect(shape(conversation(second.body))).toEqual(['user:and now?', 'assistant→[p2]', 'tool(p2)']);
    expect(String(conversation(second.body)[2]?.['content'])).toContain('[image image/png, 70 B, not shown]');
    expect(second.rawBody).not.toContain('image_url');
  });
});
