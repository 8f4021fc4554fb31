/** `sessions export`: a bundle or a session record, local or on the Control API, rendered as markdown or JSON. */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractBundle } from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../../context.js';
import { toBlueError, usageError } from '@blue-agent/contract/errors.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { printable } from '../../control-api/sessions.js';

import {
  EXPORT_FORMATS,
  renderJson,
  renderMarkdown,
  renderRecordJson,
  renderRecordMarkdown,
  type ExportFormat,
  type ExportInput,
  type RecordExportInput,
} from '../../sessions/export.js';
import { parseRecord, RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
import type { TranscriptSource } from '@blue-agent/contract/harnesses/types.js';
import { readTranscript, wantedFiles } from '@blue-agent/contract/harnesses/index.js';
import { withApi } from './common.js';

// ---------------------------------------------------------------------------------------------------------------
// export

export async function sessionsExportCommand(
  ctx: Context,
  idOrFile: string,
  opts: { format: string; out?: string },
): Promise<number> {
  const format = opts.format as ExportFormat;
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw usageError(
      `--format must be markdown or json, not "${printable(opts.format).slice(0, 40)}"`,
      "markdown: the conversation, readable; json: the manifest and the Control API's metadata.",
    );
  }
  const local = path.resolve(ctx.cwd, idOrFile);
  const isFile = await stat(local).then(
    (s) => s.isFile(),
    () => false,
  );
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  const temp = await mkdtemp(path.join(tmpdir(), 'blue-agent-export-'));
  let input: ExportInput | RecordExportInput;
  try {
    if (isFile) {
      input = await readBundle(local, path.join(temp, 'bundle'), profiles, format);
    } else {
      input = await withApi(ctx, async (api) => {
        const session = await api.resolve(idOrFile);
        const file = path.join(temp, 'bundle.tar.gz');
        await api.download(session, file);
        if (session.artifact_format === RECORD_FORMAT) {
          const bytes = await readFile(file);
          return {
            record: parseRecord(bytes, `session ${session.id}`),
            session,
            object: { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') },
          };
        }
        return { ...(await readBundle(file, path.join(temp, 'bundle'), profiles, format)), session };
      });
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
  const text =
    'record' in input
      ? format === 'json'
        ? renderRecordJson(input)
        : renderRecordMarkdown(input)
      : format === 'json'
        ? renderJson(input)
        : renderMarkdown(input);
  if (opts.out === undefined) {
    ctx.stdout.write(text);
    return 0;
  }
  const out = path.resolve(ctx.cwd, opts.out);
  await writeFile(out, text, { mode: 0o600 }).catch((error: unknown) => {
    throw toBlueError(error, { action: 'write the export to', file: out });
  });
  ctx.stdout.write(`Wrote the ${format} export of ${printable(input.session?.id ?? idOrFile)} to ${printable(out)}\n`);
  return 0;
}

/** Verifies and extracts the bundle (nothing in it is trusted before that), then reads the files the harness needs. */
async function readBundle(
  file: string,
  dir: string,
  profiles: Awaited<ReturnType<typeof loadProfiles>>,
  format: ExportFormat,
): Promise<ExportInput> {
  const result = await extractBundle(file, dir, { profiles });
  const manifest = result.manifest;
  const bundle = { size: result.size, sha256: result.sha256 };
  if (format === 'json') return { manifest, bundle };
  const sources: TranscriptSource[] = [];
  for (const i of wantedFiles(manifest)) {
    const f = manifest.files[i]!;
    sources.push({
      role: f.role,
      path: f.path,
      ...(f.native_path === undefined ? {} : { native_path: f.native_path }),
      bytes: await readFile(result.files[i]!),
    });
  }
  return { manifest, bundle, transcript: readTranscript(manifest, sources) };
}
