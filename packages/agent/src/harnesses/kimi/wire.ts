/**
 * Kimi Code's wire logs (`agents/<agent>/wire.jsonl`): one JSON record per line, appended as the session runs. From
 * 0.37, `{"type": "runtime.set_binding", "workspaceId": <work-dir key>, ...}` binds the agent to its working
 * directory, and a resume in another directory is refused unless the binding names that directory's key: a restore
 * there rewrites that one value on each such line (every other byte kept).
 */
import { parseTree, type ParseError } from 'jsonc-parser';

const BINDING = '"runtime.set_binding"';

/** The wire with every binding's `workspaceId` set to `key`; the same bytes when there is nothing to change. */
export function withWorkspace(bytes: Buffer, key: string): Buffer {
  if (!bytes.includes(BINDING)) return bytes;
  const parts: Buffer[] = [];
  let changed = false;
  let start = 0;
  while (start < bytes.length) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    const line = bytes.subarray(start, end);
    const next = line.includes(BINDING) ? rebound(line, key) : line;
    if (next !== line) changed = true;
    parts.push(next);
    if (end < bytes.length) parts.push(bytes.subarray(end, end + 1));
    start = end + 1;
  }
  return changed ? Buffer.concat(parts) : bytes;
}

function rebound(line: Buffer, key: string): Buffer {
  const text = line.toString('utf8');
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: false, disallowComments: true });
  if (errors.length > 0 || root?.type !== 'object') return line;
  const props = root.children ?? [];
  const prop = (name: string) => props.filter((p) => p.children?.[0]?.value === name);
  if (prop('type').at(-1)?.children?.[1]?.value !== 'runtime.set_binding') return line;
  const found = prop('workspaceId');
  const value = found.at(-1)?.children?.[1];
  if (found.length !== 1 || value?.type !== 'string' || value.value === key) return line;
  return Buffer.from(
    `${text.slice(0, value.offset)}${JSON.stringify(key)}${text.slice(value.offset + value.length)}`,
    'utf8',
  );
}
