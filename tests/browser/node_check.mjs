// Is this node new enough for the browser tests? playwright-core
// (reports/web/node_modules) says which Node it needs in its package.json
// (engines.node, e.g. ">=18"); under an older node it fails deep inside
// playwright with a stack trace far from the cause, and the tests after it
// with a wall of missing screenshots. This says it in one line instead.
//
//   node tests/browser/node_check.mjs [PACKAGE.json]
//
// Silent, status 0, when process.versions.node satisfies the package's
// engines.node (a ">=MAJOR[.MINOR[.PATCH]]" bound; the package is
// playwright-core's unless named); one line and status 77 when it does not;
// one line and status 1 when the package cannot be read. check_report.mjs
// imports it first, so it never starts playwright on a node too old for it.
// Written for any Node from 12 on: no syntax newer than the check itself.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(import.meta.url) === process.argv[1];
const path = (main && process.argv[2]) ||
  fileURLToPath(new URL('../../reports/web/node_modules/playwright-core/package.json', import.meta.url));
let pkg;
try {
  pkg = JSON.parse(readFileSync(path, 'utf8'));
} catch (e) {
  console.log(`node_check: cannot read ${path}: ${e.message}`);
  process.exit(1);
}
const want = (pkg.engines && pkg.engines.node) || '';
const m = /^\s*>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(want);
if (want && !m) {
  console.log(`node_check: ${pkg.name} ${pkg.version} asks for node "${want}", a bound this check does not read`);
  process.exit(1);
}
const num = (v) => v.map((x) => Number(x || 0));
const have = num(process.versions.node.split('.'));
const need = m ? num(m.slice(1, 4)) : [0, 0, 0];
let older = false;
for (let i = 0; i < 3; i++) {
  if (have[i] !== need[i]) { older = have[i] < need[i]; break; }
}
if (older) {
  console.log(`node ${process.versions.node} is too old for ${pkg.name} ${pkg.version} (it needs node ${want}): ` +
    'install a newer nodejs, or pin a playwright-core that supports this one in reports/web/package.json');
  process.exit(77);
}
