import { HARNESSES } from '../../harnesses/names.js';
import type { OptionDeclaration } from '../declaration.js';

/** `--harness NAME`, repeatable: the commands that act on every harness act only on those named. */
export const harnessOption: OptionDeclaration = {
  flags: '--harness <name>',
  description: `only this harness, repeatable (${HARNESSES.join(', ')})`,
  parse: (value: string, previous: string[] | undefined) => {
    if (!(HARNESSES as readonly string[]).includes(value))
      throw new Error(`unknown harness "${value}"; use one of ${HARNESSES.join(', ')}.`);
    return [...(previous ?? []), value];
  },
};

/** A repeatable option's value: every value given, in order. */
export function repeatable(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
