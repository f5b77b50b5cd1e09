// attach_file (docs/product.md "Share files"): the agent sends a workspace file with its answer. The call only
// checks the file; the chat adapter uploads it through its outbox after the answer's text, keyed by
// the call, so a crash or a repeated answer never sends it twice.
import { z } from 'zod';
import { formatSize } from '../core/format-size.js';
import { defineTool, type AnyTool } from '../core/tool.js';
import { withoutServerPaths } from './workspace.js';
import type { WorkspaceAttachments } from './workspace-attachments.js';

/** The attach_file tool over the workspaces `files` reads from. */
export function attachFileTool(files: Pick<WorkspaceAttachments, 'checkForUpload' | 'options'>): AnyTool {
  const tool = defineTool({
    name: 'attach_file',
    deliversFile: true,
    description: `Send a file from the session workspace to the thread with your next answer (e.g. a report you wrote, a chart, a file someone shared and you changed). At most ${formatSize(files.options.maxFileBytes)}. Call it before you answer; mention the file in the answer.`,
    input: z.object({ path: z.string().min(1).describe('Path relative to the session workspace, e.g. "out/report.csv"') }),
    async execute(input, context) {
      const { name, size } = await files.checkForUpload(context.sessionId, input.path);
      return `${input.path} (${formatSize(size)}) will be attached to your answer as ${name}.`;
    },
  });
  return withoutServerPaths(tool as AnyTool, files.options.root);
}
