/**
 * Where a record keeps the user's turn in the shapes most harnesses share: the texts of a content value (and what
 * marks a tool result or the harness speaking), and the common message envelopes.
 */
import { describe, expect, it } from 'vitest';
import { messageUserTurn, textsOf } from '../../src/harness-kit/user-turn.js';

describe("the user's turn in a record", () => {
  it('reads the texts of a content value, and what marks a tool result or the harness', () => {
    const turn = () => ({ texts: [] as string[], toolResult: false });
    const a = turn();
    textsOf(
      [
        's',
        null,
        7,
        { text: 'untyped' },
        { type: 'input_text', text: 'input' },
        { type: 'text', text: 5 },
        { type: 'image', text: 'no' },
        { type: 'text', text: 'x', synthetic: false },
      ],
      a,
    );
    expect(a).toEqual({ texts: ['s', 'untyped', 'input', 'x'], toolResult: false });
    const b = turn();
    textsOf(
      [
        { type: 'function_call_output', output: 'o' },
        { type: 'text', text: 'after' },
      ],
      b,
    );
    expect(b).toEqual({ texts: ['after'], toolResult: true });
    const c = turn();
    textsOf({ text: 'an object' }, c);
    textsOf(42, c);
    expect(c).toEqual({ texts: [], toolResult: false });
  });

  it('finds the user in the common message shapes', () => {
    expect(messageUserTurn({ type: 'message', role: 'user', content: 'm' })).toEqual({
      texts: ['m'],
      toolResult: false,
    });
    expect(messageUserTurn({ type: 'user', content: 'typed user' })).toEqual({
      texts: ['typed user'],
      toolResult: false,
    });
    expect(messageUserTurn({ type: 'assistant', role: 'user', content: 'no' })).toBeUndefined();
    expect(messageUserTurn({ type: 'message', content: 'no role' })).toBeUndefined();
    expect(messageUserTurn({ role: 'assistant', content: 'no' })).toBeUndefined();
    expect(messageUserTurn({ info: { role: 'user' }, message: { content: 'inner' } })).toEqual({
      texts: ['inner'],
      toolResult: false,
    });
    expect(messageUserTurn({ role: 'user', text: 'as text' })).toEqual({ texts: ['as text'], toolResult: false });
    expect(
      messageUserTurn({ role: 'user', content: 'wins', parts: [{ type: 'text', text: 'no' }], prompt: 'no' }),
    ).toEqual({ texts: ['wins'], toolResult: false });
    expect(messageUserTurn({ role: 'user', parts: 'not an array', prompt: 'the prompt' })).toEqual({
      texts: ['the prompt'],
      toolResult: false,
    });
    expect(messageUserTurn({ message: { role: 'user', parts: [{ type: 'text', text: 'inner parts' }] } })).toEqual({
      texts: ['inner parts'],
      toolResult: false,
    });
    expect(messageUserTurn({ role: 'user', prompt: 5, text: 'then text' })).toEqual({
      texts: ['then text'],
      toolResult: false,
    });
    expect(messageUserTurn({ role: 'user', text: 5 })).toEqual({ texts: [], toolResult: false });
    expect(messageUserTurn(['user'])).toBeUndefined();
    expect(messageUserTurn(null)).toBeUndefined();
    expect(messageUserTurn({ message: { role: 'user' }, parts: [{ type: 'text', text: 'outer parts' }] })).toEqual({
      texts: ['outer parts'],
      toolResult: false,
    });
  });
});
