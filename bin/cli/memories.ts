/** `stepwise memories [list|show|delete]`: the caller's long-term memory files (docs/memory.md). */
import type { Command } from 'commander';
import type { ApiClient } from '../../functions/api/client.js';

type Print = (value: unknown, human: () => string) => void;

interface ScopeOptions {
  scope: 'owner' | 'tenant' | 'session';
  session?: string;
}

/** Made by the program itself, so this file adds no import of commander to the bundle. */
const scopeOption = (program: Command) => program.createOption('--scope <scope>', 'whose memory: owner (yours), tenant (your tenant\'s; reviewers and admins), session').choices(['owner', 'tenant', 'session']).default('owner');

function queryOf(opts: ScopeOptions): { scope: ScopeOptions['scope']; sessionId?: string } {
  return { scope: opts.scope, ...(opts.session ? { sessionId: opts.session } : {}) };
}

/** Adds the `memories` command and its subcommands to the program. */
export function memoriesCommand(program: Command, client: () => ApiClient, print: Print): void {
  const memories = program.command('memories').description('your long-term memory files (runs started with memory: { scope })');
  memories
    .command('list', { isDefault: true })
    .description('the memory files of a scope, with sizes and when each was written')
    .addOption(scopeOption(program))
    .option('--session <sessionId>', 'the session, for --scope session')
    .action(async (opts: ScopeOptions) => {
      const page = await client().memories(queryOf(opts));
      print(page, () => page.items.map((item) => `${item.path}\t${item.size}\t${item.updatedAt}`).join('\n') || '(no memories)');
    });
  memories
    .command('show')
    .description('print one memory file')
    .argument('<path>', 'the file, such as /memories/notes.md')
    .addOption(scopeOption(program))
    .option('--session <sessionId>', 'the session, for --scope session')
    .action(async (path: string, opts: ScopeOptions) => {
      process.stdout.write(await client().memory(path, queryOf(opts)));
    });
  memories
    .command('delete')
    .description('delete one memory file')
    .argument('<path>', 'the file, such as /memories/notes.md')
    .addOption(scopeOption(program))
    .option('--session <sessionId>', 'the session, for --scope session')
    .action(async (path: string, opts: ScopeOptions) => {
      await client().deleteMemory(path, queryOf(opts));
      print({ deleted: path }, () => `deleted ${path}`);
    });
}
