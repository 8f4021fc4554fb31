/**
 * Layout of a text file, so that lines the agent adds look like the lines around them.
 */

/** The line ending the text already uses (from its first line break), or `\n`. */
export function eolOf(text: string): string {
  const lf = text.indexOf('\n');
  return lf > 0 && text[lf - 1] === '\r' ? '\r\n' : '\n';
}

/** The indentation (leading spaces and tabs) of the line that holds `pos`, up to `pos`. */
export function lineIndent(text: string, pos: number): string {
  const start = text.lastIndexOf('\n', pos - 1) + 1;
  let end = start;
  while (end < pos && (text[end] === ' ' || text[end] === '\t')) end++;
  return text.slice(start, end);
}
