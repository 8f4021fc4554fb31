/** What the user owns in a matcher-hooks settings file: the comparison both directions are checked against. */
import { canonical, kids, propertyParts, type Node } from './json-splice.js';
import { type Managed, isManagedHookNode, isOwnGroup } from './matcher-hooks-scan.js';

/** A user group as the user wrote it, minus any managed hooks inside it. */
function userGroup(text: string, group: Node, managed: Managed): string {
  const entries = kids(group).map((prop) => {
    const parts = propertyParts(prop);
    if (parts === undefined) return '?';
    if (parts.key !== 'hooks' || parts.value.type !== 'array')
      return `${JSON.stringify(parts.key)}:${canonical(text, parts.value)}`;
    const hooks = kids(parts.value).filter((hook) => !isManagedHookNode(hook, managed));
    return `"hooks":[${hooks.map((hook) => canonical(text, hook)).join(',')}]`;
  });
  return `{${entries.join(',')}}`;
}

/**
 * The user's entries: the document without managed hooks and own groups. Event arrays and a `hooks` object left
 * empty are dropped, since they mean the same to the harness as absent ones and removal may take them away.
 */
export function userView(text: string, root: Node, managed: Managed): string {
  if (root.type !== 'object') return canonical(text, root);
  const entries: string[] = [];
  for (const prop of kids(root)) {
    const parts = propertyParts(prop);
    if (parts === undefined) continue;
    if (parts.key !== 'hooks' || parts.value.type !== 'object') {
      entries.push(`${JSON.stringify(parts.key)}:${canonical(text, parts.value)}`);
      continue;
    }
    const events: string[] = [];
    for (const eventProp of kids(parts.value)) {
      const event = propertyParts(eventProp);
      if (event === undefined) continue;
      if (event.value.type !== 'array') {
        events.push(`${JSON.stringify(event.key)}:${canonical(text, event.value)}`);
        continue;
      }
      const groups = kids(event.value)
        .filter((group) => !isOwnGroup(group, managed))
        .map((group) => (group.type === 'object' ? userGroup(text, group, managed) : canonical(text, group)));
      if (groups.length > 0) events.push(`${JSON.stringify(event.key)}:[${groups.join(',')}]`);
    }
    if (events.length > 0) entries.push(`"hooks":{${events.join(',')}}`);
  }
  return `{${entries.join(',')}}`;
}
