// Runs a CommonJS bundle with a V8 code cache of its own, taken after the bundle has run. Node.js's compile cache is
// taken when a module is compiled, so it holds only the module's top level: every function a run calls is compiled
// again in every process. A cache taken after a run holds them all.
//
// The cache lives in Node.js's compile cache folder, under a name made of the bundle's identity (device, inode, size,
// mtime); V8 refuses a cache made by another V8, with other flags or for another source, and it is then made anew.
// Only a cache file owned by this user and writable by nobody else is read. Plain JavaScript without dependencies,
// CommonJS like all of bin/ (an ES module's import of a built-in would build its facade, which reads every export and
// so loads what the built-in keeps lazy: fs.promises and all it needs).
var fs = require('fs');
var nodeModule = require('module');
var path = require('path');
var vm = require('vm');

/**
 * The cache file for `file` in `dir`, or undefined when there is no folder to keep it in: none, or one another user
 * could write to (Node.js's default is under the shared temporary folder).
 */
function cacheFileFor(file, dir) {
  if (!dir || !privateFolder(dir)) return undefined;
  var st = fs.statSync(file);
  return path.join(dir, 'blue-agent-' + [st.dev, st.ino, st.size, Math.floor(st.mtimeMs)].join('-') + '.v8cache');
}

function privateFolder(dir) {
  try {
    var st = fs.statSync(dir);
    return st.isDirectory() && (!process.getuid || st.uid === process.getuid()) && (st.mode & 0o022) === 0;
  } catch (error) {
    return false;
  }
}

/** The bytes of `file` when this user owns it and nobody else may write it; undefined otherwise. */
function readOwnFile(file) {
  var fd;
  try {
    fd = fs.openSync(file, 'r');
    var st = fs.fstatSync(fd);
    if (!st.isFile() || (process.getuid && st.uid !== process.getuid()) || (st.mode & 0o022) !== 0) return undefined;
    return fs.readFileSync(fd);
  } catch (error) {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Writes `bytes` to `file` through a private temporary file renamed into place; a failure only loses the cache. */
function writeCacheFile(file, bytes) {
  var temp = file + '.' + process.pid + '.tmp';
  try {
    // Exclusive: never through a file or link that is already there.
    fs.writeFileSync(temp, bytes, { mode: 0o600, flag: 'wx' });
    fs.renameSync(temp, file);
  } catch (error) {
    try {
      fs.rmSync(temp, { force: true });
    } catch (ignored) {
      // Nothing more to do: the next run makes the cache again.
    }
  }
}

/**
 * Loads the CommonJS bundle `file`, using and keeping its code cache in `cacheDir` (none when undefined). Returns the
 * bundle's exports, and save(), to be called once the bundle has done its work: it writes the cache when there was
 * none or V8 refused it.
 */
function loadBundle(file, cacheDir) {
  var source = fs.readFileSync(file, 'utf8');
  var cacheFile = cacheDir ? cacheFileFor(file, cacheDir) : undefined;
  var cached = cacheFile ? readOwnFile(cacheFile) : undefined;
  var script = new vm.Script('(function (exports, require, module, __filename, __dirname) {' + source + '\n})', {
    filename: file,
    cachedData: cached,
  });
  var loaded = { exports: {} };
  script.runInThisContext()(loaded.exports, nodeModule.createRequire(file), loaded, file, path.dirname(file));
  return {
    exports: loaded.exports,
    cacheRejected: cached !== undefined && script.cachedDataRejected === true,
    save: function () {
      if (cacheFile && (cached === undefined || script.cachedDataRejected))
        writeCacheFile(cacheFile, script.createCachedData());
    },
  };
}

exports.cacheFileFor = cacheFileFor;
exports.loadBundle = loadBundle;
