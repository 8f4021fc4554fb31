/** The conversations the session pages show, read from their bundles a few at a time and kept for the next views. */
import type { RouteContext } from '../../route-context.js';
import { storedTranscript, type Conversation } from '../../search-text.js';
import { isExpired, type Artifact } from '../../store/index.js';
import { bounded } from '../transcript.js';

/**
 * Uploads are immutable: a read transcript (bounded) is kept for the next views, the last few of them, until its
 * upload's retention deadline (what was read of a bundle goes with it).
 */
const transcripts = new Map<string, { conversation: Conversation | undefined; deadline: number }>();

const KEPT_TRANSCRIPTS = 16;

/** Bundles read at once for pages, at most; more wait their turn (each read unpacks a bundle). */
const READS_AT_ONCE = 2;

let reading = 0;

const waiting: (() => void)[] = [];

/** Drops the kept transcripts whose upload passed its retention deadline. */
export function forgetExpiredTranscripts(now: number): void {
  for (const [id, kept] of transcripts) if (kept.deadline <= now) transcripts.delete(id);
}

/** The conversation of a verified upload as a page shows it, or undefined when it cannot be read as a session. */
export async function transcriptOf(rc: RouteContext, artifact: Artifact): Promise<Conversation | undefined> {
  if (rc.bundleProfiles === undefined) return undefined;
  if (isExpired(artifact, rc.now())) return undefined;
  if (transcripts.has(artifact.id)) return transcripts.get(artifact.id)!.conversation;
  while (reading >= READS_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
  reading++;
  try {
    const read = await storedTranscript(rc.blobs, artifact, rc.bundleProfiles);
    const shown = read === undefined ? undefined : bounded(read);
    transcripts.set(artifact.id, { conversation: shown, deadline: artifact.retention_deadline });
    if (transcripts.size > KEPT_TRANSCRIPTS) transcripts.delete(transcripts.keys().next().value!);
    return shown;
  } finally {
    reading--;
    waiting.shift()?.();
  }
}
