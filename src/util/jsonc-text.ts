/**
 * Reading jsonc-parser syntax trees against their text: where nodes end and which properties an object holds, as
 * needed to compute exact byte ranges for edits that leave the rest of a user's file untouched.
 */
import type { Node } from 'jsonc-parser';

export type { Node };

export function endOf(node: Node): number {
  return node.offset + node.length;
}

/** Children of an object (property nodes) or array (element nodes); empty for anything else. */
export function kids(node: Node | undefined): Node[] {
  return node !== undefined && (node.type === 'object' || node.type === 'array') && Array.isArray(node.children)
    ? node.children
    : [];
}

/** Key and value of a property node, or undefined for a malformed one. */
export function propertyParts(prop: Node): { key: string; keyNode: Node; value: Node } | undefined {
  const [keyNode, value] = prop.children ?? [];
  if (prop.type !== 'property' || keyNode === undefined || value === undefined || typeof keyNode.value !== 'string') {
    return undefined;
  }
  return { key: keyNode.value, keyNode, value };
}

/** Every property of `object` named `name`, in document order (JSON allows duplicates; the last one wins). */
export function propsNamed(object: Node, name: string): Node[] {
  if (object.type !== 'object') return [];
  return kids(object).filter((prop) => propertyParts(prop)?.key === name);
}

/** The property named `name` that a JSON reader keeps when the key repeats: the last one. */
export function lastNamed(object: Node | undefined, name: string): Node | undefined {
  return object === undefined ? undefined : propsNamed(object, name).at(-1);
}

/** The value node of a property node. */
export function valueOf(prop: Node): Node | undefined {
  return propertyParts(prop)?.value;
}
