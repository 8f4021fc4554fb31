/**
 * A loopback stand-in for the model APIs the harness CLIs talk to, so a real CLI can run a whole session offline.
 * One server speaks all three wire formats:
 *   - Anthropic Messages: POST /v1/messages (SSE when `stream: true`), POST /v1/messages/count_tokens (Claude Code)
 *   - OpenAI Responses:   POST /v1/responses, SSE (Codex)
 *   - OpenAI Chat:        POST /v1/chat/completions, SSE or JSON (OpenCode, Qwen Code, Kimi Code)
 *   - Gemini:             POST /v1beta/models/<model>:streamGenerateContent?alt=sse (SSE), :generateContent (JSON;
 *                         a request for JSON output gets a JSON object), :countTokens (Gemini CLI)
 *   - GET /v1/models in both the OpenAI and the Anthropic list shapes, GET /v1beta/models in Gemini's
 * Every request is recorded with its decoded body. Anything else gets a JSON 404 and is recorded in `unknown`, so a
 * test failure shows what a CLI tried to reach.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync, inflateSync, zstdDecompressSync } from 'node:zlib';

export interface StubRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body; the raw text when it is not JSON; undefined when empty. */
  body: unknown;
  /** How the stub answered. */
  status: number;
  at: number;
}

export interface ModelStubOptions {
  /** The assistant's text for every answer. */
  reply?: string;
  /** Called with one line per request (for debugging a CLI that misbehaves). */
  log?: (line: string) => void;
  /**
   * Gemini API only: a turn that does not answer a tool result calls this tool first (a `functionCall` part), and the
   * answer to its result is the reply; for recordings with tool use.
   */
  geminiToolCall?: { name: string; args: Record<string, unknown> };
}

export interface ModelStub {
  /** `http://127.0.0.1:PORT` — no trailing slash, no `/v1`. */
  url: string;
  port: number;
  /** Every request, in arrival order. */
  requests: StubRequest[];
  /** Requests the stub had no route for (answered 404). */
  unknown: StubRequest[];
  reply: string;
  /**
   * While set, a model request it matches is never answered (the connection stays open until the stub closes): a turn
   * hangs mid-way, as when the model stalls and the person kills the harness.
   */
  hold: ((request: StubRequest) => boolean) | undefined;
  /** Requests held so far. */
  held: StubRequest[];
  /** Requests to one path (method optional). */
  requestsTo(path: string, method?: string): StubRequest[];
  /** The bodies POSTed to one path, as JSON text, one per line: what a conversation sent the model. */
  textSentTo(path: string): string;
  /** `METHOD /path -> status` per request, for assertion messages. */
  summary(): string;
  clear(): void;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 32 * 1024 * 1024;

export async function startModelStub(options: ModelStubOptions = {}): Promise<ModelStub> {
  const requests: StubRequest[] = [];
  const unknown: StubRequest[] = [];
  let counter = 0;
  const nextId = (prefix: string) => `${prefix}_stub${Date.now().toString(36)}${(++counter).toString(36)}`;

  const stub: ModelStub = {
    url: '',
    port: 0,
    requests,
    unknown,
    reply: options.reply ?? 'Hello from the stub model.',
    hold: undefined,
    held: [],
    requestsTo: (p, method) => requests.filter((r) => r.path === p && (method === undefined || r.method === method)),
    textSentTo: (p) =>
      requests
        .filter((r) => r.path === p && r.method === 'POST')
        .map((r) => JSON.stringify(r.body))
        .join('\n'),
    summary: () => requests.map((r) => `${r.method} ${r.path}${r.query} -> ${r.status}`).join('\n'),
    clear: () => {
      requests.length = 0;
      unknown.length = 0;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      options.log?.(`model-stub: ${req.method} ${req.url} failed: ${(error as Error).stack ?? String(error)}`);
      if (!res.headersSent) sendJson(res, 500, { error: { type: 'stub_error', message: String(error) } });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const record: StubRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search,
      headers: req.headers,
      body: parseBody(raw),
      status: 200,
      at: Date.now(),
    };
    requests.push(record);
    if (record.method === 'POST' && stub.hold?.(record) === true) {
      stub.held.push(record);
      options.log?.(`model-stub: ${record.method} ${record.path} held`);
      return;
    }
    const status = route(record, res);
    record.status = status;
    if (status === 404) unknown.push(record);
    options.log?.(`model-stub: ${record.method} ${record.path}${record.query} -> ${status}`);
  }

  /** Writes the answer; returns its status. */
  function route(r: StubRequest, res: ServerResponse): number {
    const body = (r.body ?? {}) as Record<string, unknown>;
    const p = r.path.replace(/\/+$/, '');
    if (r.method === 'POST' && p.endsWith('/v1/messages/count_tokens')) {
      return sendJson(res, 200, { input_tokens: estimateTokens(body) });
    }
    if (r.method === 'POST' && p.endsWith('/v1/messages')) return anthropicMessages(body, res);
    if (r.method === 'POST' && p.endsWith('/v1/responses')) return openaiResponses(body, res);
    if (r.method === 'POST' && p.endsWith('/v1/chat/completions')) return openaiChat(body, res);
    if (r.method === 'GET' && p.endsWith('/v1/models')) return modelList(r, res);
    const gemini = /\/v1beta\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/.exec(p);
    if (r.method === 'POST' && gemini !== null) return geminiGenerate(body, gemini[1]!, gemini[2]!, res);
    if (r.method === 'GET' && p.endsWith('/v1beta/models'))
      return sendJson(res, 200, { models: [{ name: 'models/stub-model', displayName: 'Stub' }] });
    if (r.method === 'HEAD' || (r.method === 'GET' && (p === '' || p === '/v1')))
      return sendJson(res, 200, { ok: true });
    return sendJson(res, 404, {
      error: { type: 'not_found', message: `model stub has no route for ${r.method} ${r.path}` },
    });
  }

  function anthropicMessages(body: Record<string, unknown>, res: ServerResponse): number {
    const model = typeof body.model === 'string' ? body.model : 'claude-stub';
    const id = nextId('msg');
    const text = stub.reply;
    const usage = {
      input_tokens: estimateTokens(body),
      output_tokens: estimateTokens(text),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    };
    if (body.stream !== true) {
      return sendJson(res, 200, {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [{ type: 'text', text }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage,
      });
    }
    const sse = startSse(res, { 'request-id': nextId('req') });
    sse.event('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    });
    sse.event('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'text', text: '' },
    });
    sse.event('ping', { type: 'ping' });
    sse.event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } });
    sse.event('content_block_stop', { type: 'content_block_stop', index: 0 });
    sse.event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    });
    sse.event('message_stop', { type: 'message_stop' });
    sse.end();
    return 200;
  }

  function openaiResponses(body: Record<string, unknown>, res: ServerResponse): number {
    const model = typeof body.model === 'string' ? body.model : 'stub-model';
    const responseId = nextId('resp');
    const itemId = nextId('msg');
    const text = stub.reply;
    const inputTokens = estimateTokens(body);
    const outputTokens = estimateTokens(text);
    const usage = {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    };
    const created = Math.floor(Date.now() / 1000);
    const base = { id: responseId, object: 'response', created_at: created, model };
    const doneItem = {
      type: 'message',
      id: itemId,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    };
    if (body.stream === false) {
      return sendJson(res, 200, { ...base, status: 'completed', output: [doneItem], usage });
    }
    const sse = startSse(res);
    let seq = 0;
    const emit = (type: string, data: Record<string, unknown>) =>
      sse.event(type, { type, sequence_number: seq++, ...data });
    emit('response.created', { response: { ...base, status: 'in_progress', output: [] } });
    emit('response.in_progress', { response: { ...base, status: 'in_progress', output: [] } });
    emit('response.output_item.added', {
      output_index: 0,
      item: { type: 'message', id: itemId, status: 'in_progress', role: 'assistant', content: [] },
    });
    emit('response.content_part.added', {
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    });
    emit('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta: text });
    emit('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text });
    emit('response.content_part.done', {
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text, annotations: [] },
    });
    emit('response.output_item.done', { output_index: 0, item: doneItem });
    emit('response.completed', { response: { ...base, status: 'completed', output: [doneItem], usage } });
    sse.end();
    return 200;
  }

  function openaiChat(body: Record<string, unknown>, res: ServerResponse): number {
    const model = typeof body.model === 'string' ? body.model : 'stub-model';
    const id = nextId('chatcmpl');
    const created = Math.floor(Date.now() / 1000);
    const text = stub.reply;
    const promptTokens = estimateTokens(body);
    const completionTokens = estimateTokens(text);
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    };
    if (body.stream !== true) {
      return sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
        usage,
      });
    }
    const sse = startSse(res);
    const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) =>
      sse.data({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
        ...extra,
      });
    chunk({ role: 'assistant', content: '' }, null);
    chunk({ content: text }, null);
    chunk({}, 'stop', { usage });
    sse.raw('data: [DONE]\n\n');
    sse.end();
    return 200;
  }

  /**
   * Gemini's generateContent family. Gemini CLI also asks side questions with a JSON response schema (is it the user's
   * turn, which model to route to): those get a JSON object that answers every one of them.
   */
  function geminiGenerate(body: Record<string, unknown>, model: string, method: string, res: ServerResponse): number {
    if (method === 'countTokens') return sendJson(res, 200, { totalTokens: estimateTokens(body) });
    const config = (body.generationConfig ?? {}) as Record<string, unknown>;
    const wantsJson =
      config.responseMimeType === 'application/json' ||
      config.responseSchema !== undefined ||
      config.responseJsonSchema !== undefined;
    const text = wantsJson
      ? JSON.stringify({ reasoning: 'stub', next_speaker: 'user', model_choice: 'flash' })
      : stub.reply;
    const usageMetadata = {
      promptTokenCount: estimateTokens(body),
      candidatesTokenCount: estimateTokens(text),
      totalTokenCount: estimateTokens(body) + estimateTokens(text),
    };
    const candidate = (part: string, finishReason?: string) => ({
      content: { role: 'model', parts: [{ text: part }] },
      ...(finishReason === undefined ? {} : { finishReason }),
      index: 0,
    });
    const responseId = nextId('gen');
    const contents = Array.isArray(body.contents)
      ? (body.contents as { parts?: { functionResponse?: unknown }[] }[])
      : [];
    const answersTool = contents.at(-1)?.parts?.some((p) => p.functionResponse !== undefined) === true;
    if (method === 'streamGenerateContent' && !wantsJson && options.geminiToolCall !== undefined && !answersTool) {
      const sse = startSse(res);
      sse.data({
        candidates: [
          {
            content: { role: 'model', parts: [{ functionCall: options.geminiToolCall }] },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata,
        modelVersion: model,
        responseId,
      });
      sse.end();
      return 200;
    }
    if (method === 'generateContent')
      return sendJson(res, 200, {
        candidates: [candidate(text, 'STOP')],
        usageMetadata,
        modelVersion: model,
        responseId,
      });
    const sse = startSse(res);
    // Two chunks, the second with the finish reason, as the API streams a reply.
    const half = Math.ceil(text.length / 2);
    sse.data({ candidates: [candidate(text.slice(0, half))], usageMetadata, modelVersion: model, responseId });
    sse.data({ candidates: [candidate(text.slice(half), 'STOP')], usageMetadata, modelVersion: model, responseId });
    sse.end();
    return 200;
  }

  function modelList(r: StubRequest, res: ServerResponse): number {
    const created = Math.floor(Date.now() / 1000);
    // Anthropic clients send `anthropic-version`; everything else gets the OpenAI list shape.
    if (r.headers['anthropic-version'] !== undefined) {
      return sendJson(res, 200, {
        data: [{ type: 'model', id: 'claude-stub', display_name: 'Stub', created_at: new Date().toISOString() }],
        has_more: false,
        first_id: 'claude-stub',
        last_id: 'claude-stub',
      });
    }
    return sendJson(res, 200, {
      object: 'list',
      data: [{ id: 'stub-model', object: 'model', created, owned_by: 'stub' }],
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  stub.port = port;
  stub.url = `http://127.0.0.1:${port}`;
  return stub;
}

function startSse(res: ServerResponse, headers: Record<string, string> = {}) {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...headers,
  });
  return {
    event: (name: string, data: unknown) => void res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
    data: (data: unknown) => void res.write(`data: ${JSON.stringify(data)}\n\n`),
    raw: (text: string) => void res.write(text),
    end: () => void res.end(),
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown): number {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
  return status;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error(`request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks);
  // Some clients compress request bodies; record what they meant, not the bytes.
  switch (String(req.headers['content-encoding'] ?? '').toLowerCase()) {
    case 'gzip':
      return gunzipSync(raw);
    case 'br':
      return brotliDecompressSync(raw);
    case 'deflate':
      return inflateSync(raw);
    case 'zstd':
      return zstdDecompressSync(raw);
    default:
      return raw;
  }
}

function parseBody(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A rough token count, only so usage fields carry plausible non-zero numbers. */
function estimateTokens(value: unknown): number {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? '');
  return Math.max(1, Math.ceil(text.length / 4));
}
