/**
 * The transcript: per agent, the model's text (Markdown, rendered safely) and its tool calls with
 * their input, approval and result. Tool output is always text, never HTML. Items are memoized,
 * so a live delta redraws only the item it changed.
 */
import { useMemo, useState } from 'preact/hooks';
import { renderMarkdown } from '../markdown.js';
import { type Item, type Section, type TextItem, type ToolItem, type Transcript, type UsageItem, inputOf } from '../transcript.js';
import { formatCost, formatCount, memo, prettyJson, runHref } from './common.js';

const agentTitles: Record<string, string> = { single: 'Agent', architect: 'Architect', coder: 'Coder' };

/** Tool output longer than this is shown cut, with a button for the rest. */
const shownChars = 4_000;

export function TranscriptView({ t, running }: { t: Transcript; running: boolean }) {
  return (
    <div class="transcript" data-events={t.events} data-state={running ? 'running' : 'ended'}>
      {t.sections.map((section, i) => (
        <SectionView key={`${section.agent}-${i}`} section={section} index={i} running={running} planned={t.plan !== undefined} />
      ))}
      {t.sections.length === 0 && <p>{running ? 'Waiting for the first step…' : 'No messages.'}</p>}
    </div>
  );
}

const SectionView = memo(function SectionView({ section, index, running, planned }: { section: Section; index: number; running: boolean; planned: boolean }) {
  const id = `agent-${index}`;
  return (
    <section class="agent" aria-labelledby={id}>
      <h3 id={id}>
        {agentTitles[section.agent] ?? section.agent}
        {section.phase ? <span class="phase"> · {section.phase}</span> : null}
      </h3>
      <ol class="items">
        {section.items.map((item) => (
          <ItemView key={item.id} item={item} running={running} planned={planned} />
        ))}
      </ol>
    </section>
  );
});

const ItemView = memo(function ItemView({ item, running, planned }: { item: Item; running: boolean; planned: boolean }) {
  switch (item.kind) {
    case 'text':
      return <TextView item={item} />;
    case 'tool':
      return <ToolView item={item} running={running} planned={planned} />;
    case 'usage':
      return <UsageView item={item} />;
  }
});

function TextView({ item }: { item: TextItem }) {
  const html = useMemo(() => renderMarkdown(item.text), [item.text]);
  return (
    <li class={`message${item.abandoned ? ' abandoned' : ''}`} aria-busy={item.open ? 'true' : 'false'}>
      {item.abandoned && <p class="note">This answer was discarded: the step was tried again.</p>}
      <div class="markdown" dangerouslySetInnerHTML={html} />
    </li>
  );
}

/** What became of a call, in words. */
function stateOf(call: ToolItem, running: boolean, planned: boolean): { words: string; tone: string } {
  const a = call.approval;
  if (a?.decision === 'deny') {
    const said = a.message ?? a.reason;
    return { words: `Denied by ${a.decidedBy ?? 'a reviewer'}${said ? `: ${said}` : ''}`, tone: 'denied' };
  }
  if (call.result?.isError) return { words: call.result.ran === false ? 'Not run' : 'Error', tone: 'error' };
  if (call.result) {
    if (call.name === 'finish_plan' && planned) return { words: 'Plan accepted', tone: 'ok' };
    const approved = a?.decision === 'approve' ? ` · approved by ${a.decidedBy ?? 'a reviewer'}${a.edited !== undefined ? ' with edited input' : ''}` : '';
    return { words: `Done${approved}`, tone: 'ok' };
  }
  if (a && !a.decision && running) return { words: 'Waits for approval', tone: 'waiting' };
  if (a?.decision === 'approve') return { words: `Approved by ${a.decidedBy ?? 'a reviewer'}, running`, tone: 'running' };
  if (call.abandoned) return { words: 'Discarded', tone: 'muted' };
  // An accepted plan ends the Architect's loop: its call is answered by the plan, not by a message.
  if (call.name === 'finish_plan' && planned) return { words: 'Plan accepted', tone: 'ok' };
  return running ? { words: call.argsDone ? 'Running' : 'Being written', tone: 'running' } : { words: 'No result', tone: 'muted' };
}

function ToolView({ item, running, planned }: { item: ToolItem; running: boolean; planned: boolean }) {
  const state = stateOf(item, running, planned);
  const input = item.argsDone ? inputOf(item) : undefined;
  return (
    <li class={`call tone-${state.tone}${item.abandoned ? ' abandoned' : ''}`} id={`call-${item.id}`}>
      <div class="call-head">
        <span class="tool">
          <span class="sr-only">Tool call </span>
          <code>{item.name}</code>
        </span>
        <span class="state">{state.words}</span>
      </div>
      <details class="call-input" open={!item.result && (state.tone === 'waiting' || state.tone === 'running')}>
        <summary>Input</summary>
        <pre>{input !== undefined ? prettyJson(input) : item.args}</pre>
      </details>
      {item.approval?.edited !== undefined && (
        <details class="call-input">
          <summary>Input as approved</summary>
          <pre>{prettyJson(item.approval.edited)}</pre>
        </details>
      )}
      {item.approval?.message && <p class="note">Reviewer's message: {item.approval.message}</p>}
      {item.child && (
        <p class="note child-run">
          {item.child.ended ? (item.child.isError ? 'Child run ended with an error: ' : 'Child run ended: ') : 'Child run working: '}
          <a href={runHref(item.child.runId)}>
            {item.child.agent} · {item.child.runId}
          </a>
        </p>
      )}
      {item.result && <Output content={item.result.content} error={item.result.isError === true} />}
    </li>
  );
}

/** A tool's output, as text. */
function Output({ content, error }: { content: string; error: boolean }) {
  const [all, setAll] = useState(false);
  const cut = !all && content.length > shownChars;
  return (
    <div class={`output${error ? ' error' : ''}`}>
      <p class="label">{error ? 'Error result' : 'Result'}</p>
      <pre>{cut ? `${content.slice(0, shownChars)}…` : content}</pre>
      {content.length > shownChars && (
        <button type="button" class="link" onClick={() => setAll(!all)}>
          {all ? 'Show less' : `Show all ${formatCount(content.length)} characters`}
        </button>
      )}
    </div>
  );
}

function UsageView({ item }: { item: UsageItem }) {
  const u = item.usage;
  return (
    <li class="usage">
      {formatCount(u.inputTokens + u.cacheReadInputTokens + u.cacheCreationInputTokens)} tokens in ({formatCount(u.cacheReadInputTokens)} cached) ·{' '}
      {formatCount(u.outputTokens)} out
      {item.costUsd !== undefined ? ` · ${formatCost(item.costUsd)}` : ''}
    </li>
  );
}
