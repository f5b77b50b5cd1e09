// A loopback server answering every POST with the same short streamed Chat Completions answer
// (12 text chunks, a finish, usage, [DONE]); sends its port to the parent (bench/model-fetch.ts).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const answer = chunk({ role: 'assistant', content: '' })
  + Array.from({ length: 12 }, (_, index) => chunk({ content: `word ${index} ` })).join('')
  + chunk({}, 'stop')
  + `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`
  + 'data: [DONE]\n\n';

const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(200, { 'content-type': 'text/event-stream' }).end(answer));
});
server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
process.on('disconnect', () => process.exit(0));
