// Mutants Stryker should not count, each kind with its reason (see mutation.md).
import { PluginKind, declareValuePlugin } from '@stryker-mutator/api/plugin';

/** `internal(...)` as a statement: the planners' call for "the planned change failed its own check". */
function callsInternal(statement) {
  return (
    statement?.type === 'ExpressionStatement' &&
    statement.expression.type === 'CallExpression' &&
    statement.expression.callee.type === 'Identifier' &&
    statement.expression.callee.name === 'internal'
  );
}

/** `throw new BlueError('INTERNAL', ...)` as a statement: the same call spelled out, as in the Codex planner's edit
 * check. */
function throwsInternal(statement) {
  const thrown = statement?.type === 'ThrowStatement' ? statement.argument : undefined;
  return (
    thrown?.type === 'NewExpression' &&
    thrown.callee.type === 'Identifier' &&
    thrown.callee.name === 'BlueError' &&
    thrown.arguments[0]?.type === 'StringLiteral' &&
    thrown.arguments[0].value === 'INTERNAL'
  );
}

const SELF_CHECK_FUNCTIONS = new Set(['internal', 'verifyInstalled']);

/**
 * A planner's self-checks (`if (<the plan is wrong>) internal(...)`, verifyInstalled, the INTERNAL error itself)
 * fire only when the planner has a bug: with correct planning no input reaches them, so weakening one changes
 * nothing a test can observe. They stay in the code as a safety net; their mutants are equivalent by construction.
 */
const selfChecks = {
  shouldIgnore(path) {
    const inside = path.find(
      (p) =>
        (p.isIfStatement() && (callsInternal(p.node.consequent) || throwsInternal(p.node.consequent))) ||
        (p.isFunctionDeclaration() && SELF_CHECK_FUNCTIONS.has(p.node.id?.name)) ||
        (p.isExpressionStatement() &&
          p.node.expression.type === 'CallExpression' &&
          p.node.expression.callee.name === 'verifyInstalled') ||
        (p.isCatchClause() &&
          p.node.body.body.length === 1 &&
          p.node.body.body[0].type === 'ReturnStatement' &&
          p.node.body.body[0].argument?.callee?.name === 'internal'),
    );
    return inside ? 'a self-check that only a planning bug can reach (mutation.md)' : undefined;
  },
};

export const strykerPlugins = [declareValuePlugin(PluginKind.Ignore, 'self-checks', selfChecks)];
