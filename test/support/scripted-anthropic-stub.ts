/**
 * A loopback Anthropic Messages server that scripts tool calls, so a real Claude Code run offline leaves the files
 * only tool use produces: a subagent transcript (`subagents/agent-*.jsonl`) and a persisted large tool result
 * (`tool-results/`). The shared model stub answers every request with text, which never gets that far.
 *
 * The main conversation is told to start one subagent, then to run one Bash command with a large output, then to
 * finish; every other request (the subagent's own turns, side requests) gets plain text.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const SUBAGENT_PROMPT = 'Subagent task: list the files of this folder and report their names.';
export const LARGE_OUTPUT_COMMAND = 'seq 1 9000';

export interface ScriptedStub {
  url: string;
  /** `kind` of every answer, in order (`agent`, `bash`, `text`). */
  answers: string[];
  close(): Promise<void>;
}

type Block = Record<string, unknown>;
interface Message {
  role?: string;
  content?: string | Block[];
}

/** `mainPrompt` tells the main conversation (whose first user message holds it) from the subagent's. */
export async function startScriptedAnthropicStub(mainPrompt: string, reply: string): Promise<ScriptedStub> {
  const answers: string[] = [];
  let counter = 0;
  const server = createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const body =
      chunks.length === 0 ? {} : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
    if (req.method === 'POST' && url.pathname.endsWith('/v1/messages/count_tokens'))
      return json(res, { input_tokens: 100 });
    if (req.method === 'GET' && url.pathname.endsWith('/v1/models')) return json(res, { data: [], has_more: false });
    if (req.method !== 'POST' || !url.pathname.endsWith('/v1/messages'))
      return json(res, { error: { type: 'not_found' } }, 404);
    const messages = (body.messages ?? []) as Message[];
    const tools = ((body.tools ?? []) as { name?: string }[]).map((t) => t.name);
    const firstUser = messages.find((m) => m.role === 'user');
    const isMain = firstUser !== undefined && JSON.stringify(firstUser.content).includes(mainPrompt);
    const toolResults = messages
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b) => b.type === 'tool_result').length;
    let answer: { kind: string; block: Block };
    if (isMain && tools.includes('Agent') && toolResults === 0) {
      answer = {
        kind: 'agent',
        block: toolUse('Agent', {
          description: 'List files',
          prompt: SUBAGENT_PROMPT,
          subagent_type: 'general-purpose',
        }),
      };
    } else if (isMain && tools.includes('Bash') && toolResults === 1) {
      answer = {
        kind: 'bash',
        block: toolUse('Bash', { command: LARGE_OUTPUT_COMMAND, description: 'Print many numbers' }),
      };
    } else {
      answer = { kind: 'text', block: { type: 'text', text: reply } };
    }
    answers.push(answer.kind);
    sse(res, body, answer.block);
  }

  function toolUse(name: string, input: Record<string, unknown>): Block {
    return { type: 'tool_use', id: `toolu_stub${Date.now().toString(36)}${(++counter).toString(36)}`, name, input };
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    answers,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function json(res: ServerResponse, body: unknown, status = 200): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sse(res: ServerResponse, body: Record<string, unknown>, block: Block): void {
  const model = typeof body.model === 'string' ? body.model : 'claude-stub';
  const usage = { input_tokens: 100, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const isTool = block.type === 'tool_use';
  const message = {
    id: `msg_stub${Date.now().toString(36)}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage,
  };
  if (body.stream !== true) {
    json(res, { ...message, content: [block], stop_reason: isTool ? 'tool_use' : 'end_turn' });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  event('message_start', { type: 'message_start', message });
  if (isTool) {
    event('content_block_start', { type: 'content_block_start', index: 0, content_block: { ...block, input: {} } });
    event('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
    });
  } else {
    event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    event('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: block.text },
    });
  }
  event('content_block_stop', { type: 'content_block_stop', index: 0 });
  event('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: isTool ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: 10 },
  });
  event('message_stop', { type: 'message_stop' });
  res.end();
}
