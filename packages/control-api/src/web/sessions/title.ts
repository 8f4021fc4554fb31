/** A session's title as the pages show it. */
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';
import type { CapturedSession } from '../../store/index.js';

export const titleOf = (s: CapturedSession): string => {
  const title = (s.current?.title ?? '').replace(/\s+/g, ' ').trim();
  return title === '' ? `Session ${s.id.slice(0, 8)}` : maskSecrets(title);
};
