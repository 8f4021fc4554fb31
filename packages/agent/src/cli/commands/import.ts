import type { CommandDeclaration } from '../declaration.js';

export const importSessions: CommandDeclaration = {
  usage: 'import <source> <file>',
  summary: 'import conversations from another tool as sessions on the Control API (source: chatgpt-export)',
  options: [{ flags: '--json', description: 'print the report as JSON' }],
  help: `
chatgpt-export: the conversations.json of a ChatGPT data export (Settings, Data controls, Export data; at most
256 MiB, read as a stream). Each conversation becomes a session (provider chatgpt_export, not resumable) with its
title and the messages of the thread ChatGPT shows, found by search. Importing again stores nothing new for a
conversation that did not change, and a new revision of the same session for one that did.

Example:
  blue-agent import chatgpt-export ~/Downloads/chatgpt/conversations.json`,
  run: async (ctx, source: string, file: string, opts: { json?: boolean }) =>
    (await import('../import.js')).importCommand(ctx, source, file, opts),
};
