/**
 * The texts a bundle's manifest carries beside the session's files — its title, summary, working folder and
 * repository — leave the machine in the manifest, in the presign request and in the Control API's record of the
 * session. Each goes through the bundle's redactor when it has one (the policy's `session_upload.redact: secrets`),
 * else through the one masking rule (src/util/secrets.ts), and is then held to the manifest's bounds.
 *
 * Every other manifest field is a name from a fixed vocabulary, a number or a digest (`STRUCTURAL_FIELDS`); a field
 * added to the manifest must be one or the other (test/bundle/metadata.test.ts reads the schema).
 */
import { maskSecrets } from '../util/secrets.js';
import type { BundleInput, BundleRedaction } from './input.js';

/** Manifest fields of a fixed form, never free text (`files[].native_path` places a file on restore). */
export const STRUCTURAL_FIELDS = [
  'schema_version',
  'artifact_format',
  'harness',
  'compatibility_profile',
  'native_session_id',
  'captured_at_unix_ms',
  'capture_reason',
  'resumable',
  'redaction',
  'files',
] as const;

/** The free-text fields of the manifest and their bounds (code points, as the schema counts them). */
export const TEXT_FIELDS = {
  cwd: 4096,
  'repository.root': 4096,
  'repository.remote': 4096,
  title: 256,
  summary: 1024,
} as const;

const ELLIPSIS = '…';

/** The input with its texts redacted (or masked) and bounded, and how many secrets were replaced. */
export async function protectMetadata(
  input: BundleInput,
  redaction: BundleRedaction | undefined,
): Promise<{ input: BundleInput; replaced: number }> {
  let replaced = 0;
  const protect = async (text: string | undefined, max: number): Promise<string | undefined> => {
    if (text === undefined) return undefined;
    let out: string;
    if (redaction === undefined) out = maskSecrets(text);
    else {
      // A text cut short may end in the head of a secret too short for any rule to know: its last word goes.
      const r = await redaction.redactText(text.endsWith(ELLIPSIS) ? dropCutWord(text) : text);
      replaced += r.replaced;
      out = r.text;
    }
    // Only what the replacing made too long is cut: a text too long to begin with is the schema's to refuse.
    return out === text || Array.from(text).length > max ? out : bound(out, max);
  };
  const repository =
    input.repository === undefined
      ? undefined
      : {
          root: (await protect(input.repository.root, TEXT_FIELDS['repository.root']))!,
          ...(input.repository.remote === undefined
            ? {}
            : { remote: await protect(input.repository.remote, TEXT_FIELDS['repository.remote']) }),
        };
  const cwd = await protect(input.cwd, TEXT_FIELDS.cwd);
  const title = await protect(input.title, TEXT_FIELDS.title);
  const summary = await protect(input.summary, TEXT_FIELDS.summary);
  const { cwd: _c, repository: _r, title: _t, summary: _s, ...rest } = input;
  return {
    input: {
      ...rest,
      ...(cwd === undefined ? {} : { cwd }),
      ...(repository === undefined ? {} : { repository: repository as NonNullable<BundleInput['repository']> }),
      ...(title === undefined ? {} : { title }),
      ...(summary === undefined ? {} : { summary }),
    },
    replaced,
  };
}

/** `text` without the word the cut ended in (`deploy with sk_li…` -> `deploy with …`). */
function dropCutWord(text: string): string {
  const head = text.slice(0, -ELLIPSIS.length);
  const space = head.search(/\S+$/u);
  return space <= 0 ? ELLIPSIS : `${head.slice(0, space)}${ELLIPSIS}`;
}

/** At most `max` code points: a marker longer than the secret it replaced may push a text over its bound. */
function bound(text: string, max: number): string {
  const points = Array.from(text);
  return points.length <= max ? text : `${points.slice(0, max - 1).join('')}${ELLIPSIS}`;
}
