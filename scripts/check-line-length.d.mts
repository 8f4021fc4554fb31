// Types for scripts/check-line-length.mjs.
export const MAX_COLUMNS: number;
export const EXCLUDED: readonly { test: (file: string) => boolean; why: string }[];
export function sourceFiles(root: string): string[];
export function longLines(
  root: string,
  files: readonly string[],
  max?: number,
): { file: string; line: number; length: number }[];
