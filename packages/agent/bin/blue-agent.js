#!/usr/bin/env node
// Entry point: kept tiny so start-up cost stays in the commands that need it. The Node.js version is checked before
// anything else loads (this file avoids syntax an old Node.js cannot parse, so that the check gets to run).
// bin/ is CommonJS (bin/package.json): an ES module entry would start Node.js's module loader and resolver first.
// What each start-up measure buys: src/util/startup/README.md.
var nodeModule = require('module');
var path = require('path');
var checkNodeVersion = require('./node-version.js').checkNodeVersion;

if (checkNodeVersion(process)) {
  // Reuse V8's compiled code across runs: the capture hook and reconcile are short-lived processes.
  if (typeof nodeModule.enableCompileCache === 'function') nodeModule.enableCompileCache();
  var argv = process.argv.slice(2);
  var dist = path.join(__dirname, '..', 'dist');
  // A plain `reconcile` runs from its one-file build, with a code cache of its own (./code-cache.js); the bundle says
  // undefined for any other reconcile, which the full CLI then parses.
  var plain =
    argv[0] === 'reconcile'
      ? Promise.resolve().then(function () {
          var bundle = require('./code-cache.js').loadBundle(
            path.join(dist, 'reconcile.cjs'),
            nodeModule.getCompileCacheDir(),
          );
          return bundle.exports.run(argv).then(function (code) {
            if (code === 0) bundle.save();
            return code;
          });
        })
      : // A bare `run` (the long-running agent and its step children) starts without the full CLI: building commander's
        // program with every command's help would stay resident in the agent for as long as it runs.
        argv.length === 1 && argv[0] === 'run'
        ? import('../dist/agent.js').then(function (loaded) {
            return loaded.run();
          })
        : Promise.resolve(undefined);
  plain
    .then(function (code) {
      if (code !== undefined) return code;
      return import('../dist/main.js').then(function (loaded) {
        return loaded.main(argv);
      });
    })
    .then(function (code) {
      process.exitCode = code;
    });
}
