/** Scripted model behaviour shared by the compaction tests. */
import { summaryInstruction } from '../../functions/core/compaction/context.js';
import type { Reply, WireRequest } from '../../local/stand-ins/messages-api.js';

/** Whether a request asks the model for a summary of the conversation. */
export const isSummaryRequest = (body: WireRequest) => JSON.stringify(body.messages.at(-1)?.content).includes(summaryInstruction);

/** Writes `files` files of about 300 tokens each, one per turn, then ends; summarizes when asked. */
export function writer(tag: string, files: number): (body: WireRequest) => Reply {
  let written = 0;
  return (body: WireRequest) => {
    if (isSummaryRequest(body)) {
      return { turn: { content: [{ type: 'text', text: `[[${tag}]] Writing notes; files 0..${written - 1} are written.` }] } };
    }
    if (written === files) return { turn: { content: [{ type: 'text', text: `Wrote ${files} files.` }] } };
    const path = `notes/${written++}.md`;
    const content = `# Note ${written}\n${'lorem ipsum '.repeat(100)}`;
    return { turn: { content: [{ type: 'tool_use', id: `toolu_${written}`, name: 'write_file', input: { path, content } }] } };
  };
}
