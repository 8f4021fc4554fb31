// The Node.js versions blue-agent runs on, checked before anything else is loaded: on an older Node.js the
// dependencies fail in ways that say nothing about the cause. Plain JavaScript without dependencies, written so that
// even an old Node.js parses it. `engines.node` in package.json says the same (a test keeps them in step).

/** The oldest supported release: [major, minor]. */
var MINIMUM = [22, 22];
var RECOMMENDED_MAJOR = 24;

/**
 * Why `version` (`process.versions.node`, e.g. `20.20.2`) cannot run blue-agent, or undefined when it can. `installer`
 * is the checkout's scripts/install-launcher when there is one: the way to a `blue-agent` command on any Node.js.
 */
function nodeVersionProblem(version, execPath, installer) {
  var match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(String(version));
  var major = match ? Number(match[1]) : 0;
  var minor = match ? Number(match[2]) : 0;
  if (major > MINIMUM[0] || (major === MINIMUM[0] && minor >= MINIMUM[1])) return undefined;
  var nodejs =
    'install Node.js ' +
    RECOMMENDED_MAJOR +
    ' LTS (https://nodejs.org/en/download, or `nvm install ' +
    RECOMMENDED_MAJOR +
    '`)';
  var launcher = ' for a `blue-agent` command that installs Node.js ' + RECOMMENDED_MAJOR + ' for itself';
  return (
    'blue-agent needs Node.js ' +
    MINIMUM[0] +
    '.' +
    MINIMUM[1] +
    ' or newer, and this is Node.js ' +
    (match ? match[0].replace(/^v/, '') : String(version)) +
    (execPath ? ' (' + execPath + ')' : '') +
    (installer
      ? '; run ' + shellWord(installer) + launcher + ', or ' + nodejs
      : '; ' + nodejs + ', or run scripts/install-launcher in a checkout of blue-agent' + launcher)
  );
}

/** `file` as a shell reads it back: as it is when nothing in it is special, else in single quotes. */
function shellWord(file) {
  return /^[A-Za-z0-9_\/.,:@%+=-]+$/.test(file) ? file : "'" + file.replace(/'/g, "'\\''") + "'";
}

/**
 * The checkout's scripts/install-launcher, three folders up from this one (packages/agent/bin), or undefined: an
 * installed package has none, and a path with control characters would not print as one line.
 */
function installerBeside(dir) {
  var file = require('path').join(dir, '..', '..', '..', 'scripts', 'install-launcher');
  try {
    return require('fs').statSync(file).isFile() && !/[\u0000-\u001f\u007f]/.test(file) ? file : undefined;
  } catch (error) {
    return undefined;
  }
}

/** The exit code of a run refused for its Node.js version (a failure, as documented). */
var EXIT_NODE_UNSUPPORTED = 1;

/**
 * Refuses an unsupported Node.js: one line on stderr (or the JSON error envelope on stdout with `--json`).
 * Returns true when the process may go on.
 */
function checkNodeVersion(proc) {
  var problem = nodeVersionProblem(proc.versions.node, proc.execPath, installerBeside(__dirname));
  if (problem === undefined) return true;
  if (proc.argv.indexOf('--json') !== -1) {
    proc.stdout.write(
      JSON.stringify({ ok: false, error: { code: 'NODE_UNSUPPORTED', message: problem } }, null, 2) + '\n',
    );
  } else {
    proc.stderr.write('blue-agent: error [NODE_UNSUPPORTED]: ' + problem + '\n');
  }
  proc.exitCode = EXIT_NODE_UNSUPPORTED;
  return false;
}

exports.MINIMUM = MINIMUM;
exports.RECOMMENDED_MAJOR = RECOMMENDED_MAJOR;
exports.nodeVersionProblem = nodeVersionProblem;
exports.installerBeside = installerBeside;
exports.EXIT_NODE_UNSUPPORTED = EXIT_NODE_UNSUPPORTED;
exports.checkNodeVersion = checkNodeVersion;
