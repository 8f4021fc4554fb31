/** A check's verdict, and what the fixes of several checks say alike. */
/** A check's verdict: every warning and failure carries what to run or do (the type will not let one without). */
export type Check =
  | { id: string; status: 'ok' | 'skip'; message: string; fix?: undefined }
  | { id: string; status: 'warn' | 'fail'; message: string; fix: string };
export const LOGIN = 'blue-agent login --control-url URL';
export function quote(file: string): string {
  return /^[\w@%+=:,./-]+$/.test(file) ? file : `'${file.replace(/'/g, `'\\''`)}'`;
}
