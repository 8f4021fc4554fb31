import {
  BASE_TEXT_LIMIT,
  makeOwnership,
  readOwnership,
  type MatcherHooksOwnership,
  type OwnershipRecord,
} from './matcher-hooks-ownership.js';
import type { RequiredSetting } from '../harnesses/types.js';
import { addRequiredSettings, removeAddedSettings } from './required-settings.js';
import { planInstall, type HookEntry } from './matcher-hooks-install.js';
export type { HookEntry } from './matcher-hooks-install.js';
import { planRemoval } from './matcher-hooks-removal.js';
import { type Managed, BOM, EMPTY_DOCUMENT, type Where, parseUser } from './matcher-hooks-scan.js';

/** What the planner needs of the managed hook (the harness contract's `ManagedHook` has more). */
export interface MatcherHook {
  readonly event: string;
  readonly command: string;
  readonly timeoutSeconds: number;
  /** Settings the harness needs before it runs hooks at all (the profile's capture.hook.requires; see
   * required-settings.ts). */
  readonly requires?: readonly RequiredSetting[];
}

/** What one harness's settings file differs in. */
export interface MatcherHooksDialect<H extends MatcherHook = MatcherHook> {
  /** The harness's name as messages show it ("<name> settings must be a JSON object"). */
  readonly displayName: string;
  /** True when a hook's `command` is this harness's managed capture command. */
  isManagedCommand(command: string): boolean;
  /**
   * The managed hook object to write for `desired`. An existing managed hook is right when it holds exactly these keys,
   * once each, with these values (as JSON strings and numbers, in any order and spelling).
   */
  entry(desired: H): HookEntry;
}

export interface MatcherHooksInput<H extends MatcherHook = MatcherHook> {
  /** Current text of the file; null when it does not exist. */
  text: string | null;
  /** Path used in error messages. */
  file: string;
  /** The one managed hook that should be in the file, or null when none should be. */
  desired: H | null;
  /** What the ledger recorded the last time the agent wrote the file, if anything. */
  owned: OwnershipRecord | undefined;
}

export interface MatcherHooksPlan {
  /** The text the file should have; null when it should not exist. Identical to the input text when nothing changes. */
  text: string | null;
  /** The ownership record to keep for the file afterwards; undefined when the agent no longer owns anything in it. */
  owned: OwnershipRecord | undefined;
  /** Managed hooks found in the input. */
  managedFound: number;
}

export function planMatcherHooks<H extends MatcherHook>(
  input: MatcherHooksInput<H>,
  dialect: MatcherHooksDialect<H>,
): MatcherHooksPlan {
  const { text, file, desired } = input;
  const record = readOwnership(input.owned);
  const bom = text?.startsWith(BOM) ? BOM : '';
  const original = text === null ? null : text.slice(bom.length);
  const managed: Managed = (command) => dialect.isManagedCommand(command);
  const where: Where = { file, name: dialect.displayName, managed, full: text ?? '', shift: bom.length };
  // Settings added with the hook come out first and go back in last: the hooks are planned on the file without them.
  const added = record?.settings ?? [];
  const body =
    original === null || original.trim() === '' || added.length === 0
      ? original
      : // biome-ignore lint/complexity/noCommaOperator: parsed as the user's first, so their typo is theirs
        (parseUser(original, where), removeAddedSettings(original, added, where));
  const requires = desired?.requires ?? [];

  if (desired === null) {
    if (body === null || body.trim() === '') return { text, owned: undefined, managedFound: 0 };
    const result = planRemoval(body, record, where);
    const out =
      result.restored || result.text === null ? result.text : result.text === original ? text : bom + result.text;
    return { text: out, owned: undefined, managedFound: result.found };
  }

  // A missing or whitespace-only file is planned as an empty object; the record says how to give it back.
  const blank = body === null || body.trim() === '';
  const base: MatcherHooksOwnership['base'] =
    body === null ? 'missing' : blank ? 'empty' : (record?.base ?? 'existing');
  const baseText =
    body === null ? undefined : blank ? (text!.length <= BASE_TEXT_LIMIT ? text! : undefined) : record?.baseText;
  const working = blank ? EMPTY_DOCUMENT : body;
  const result = planInstall(working, { event: desired.event, entry: dialect.entry(desired) }, record, where);
  const previous = record !== undefined && record.event === desired.event ? record : undefined;
  const settings =
    requires.length === 0 ? { text: result.text, added: [] } : addRequiredSettings(result.text, requires, where);

  let owned: OwnershipRecord;
  if (result.insertion !== undefined) {
    const created = [...result.insertion.created, ...(previous?.created ?? [])];
    owned = makeOwnership(base, baseText, desired.event, created, result.insertion.splice, settings.added);
  } else if (previous !== undefined && JSON.stringify(previous.settings ?? []) === JSON.stringify(settings.added)) {
    // The entry was already there and the record still describes the file: kept as given, so that an unchanged
    // file keeps an identical ledger entry.
    owned = input.owned!;
  } else if (previous !== undefined) {
    owned = makeOwnership(
      previous.base,
      previous.baseText,
      previous.event,
      previous.created,
      previous.splice,
      settings.added,
    );
  } else {
    // Found in place with no (usable) record: which containers came with it is unknown.
    owned = makeOwnership(base, baseText, desired.event, undefined, undefined, settings.added);
  }
  const out = !blank && settings.text === original ? text : bom + settings.text;
  return { text: out, owned, managedFound: result.found };
}
