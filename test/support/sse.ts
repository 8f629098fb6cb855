/** Reading server-sent events in tests: frames (`id`, `data` as an AG-UI event) and comments, as they arrive. */
import type { AGUIEvent } from '@ag-ui/core';

export interface Frame {
  id?: string;
  event?: AGUIEvent;
  /** A comment line (`: …`), without the colon. */
  comment?: string;
}

/** Parses one SSE block (the lines between blank lines). */
function frameOf(block: string): Frame[] {
  const frame: Frame = {};
  const comments: Frame[] = [];
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) comments.push({ comment: line.slice(1).trim() });
    else if (line.startsWith('id: ')) frame.id = line.slice(4);
    else if (line.startsWith('data: ')) data.push(line.slice(6));
  }
  if (data.length) frame.event = JSON.parse(data.join('\n')) as AGUIEvent;
  return [...comments, ...(frame.event || frame.id ? [frame] : [])];
}

/** Every frame of a whole body. */
export function parseSse(text: string): Frame[] {
  return text.split('\n\n').filter((block) => block.trim() !== '').flatMap(frameOf);
}

/** The frames of a streaming response as they arrive; stop iterating to stop reading (the connection is cancelled). */
export async function* frames(response: Response): AsyncGenerator<Frame> {
  if (!response.body) return;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        yield* frameOf(block);
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** The events (with their ids) of frames, comments left out. */
export function eventsOf(list: Frame[]): { id: string; event: AGUIEvent }[] {
  return list.filter((f): f is Frame & { id: string; event: AGUIEvent } => f.event !== undefined && f.id !== undefined).map(({ id, event }) => ({ id, event }));
}
