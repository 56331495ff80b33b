// The design-document path rewrite: CouchDB's two-segment `/_design/<name>` reaches the
// document and attachment routes as one id; a function's path is left for its refusing route.
import t from 'tap';
import { designDocUrl } from '../../src/http/design-url.js';

t.test('design document paths', (t) => {
  const cases: [string, string][] = [
    ['/db/a/_design/app', '/db/a/_design%2Fapp'],
    ['/db/a/_design/app?rev=1-x&revs=true', '/db/a/_design%2Fapp?rev=1-x&revs=true'],
    ['/db/a/_design/app/logo.png', '/db/a/_design%2Fapp/logo.png'],
    ['/db/a/_design/app/', '/db/a/_design%2Fapp/'],
    ['/vdb/v/_design/app', '/vdb/v/_design%2Fapp'],
    // Left alone: functions, other routes, and names that are not design documents.
    ['/db/a/_design/app/_view/all?limit=1', '/db/a/_design/app/_view/all?limit=1'],
    ['/db/a/_design/app/_info', '/db/a/_design/app/_info'],
    ['/db/a/_design', '/db/a/_design'],
    ['/db/a/_design/', '/db/a/_design/'],
    ['/db/a/_index/_design/x/json/y', '/db/a/_index/_design/x/json/y'],
    ['/db/a/doc/_design/x', '/db/a/doc/_design/x'],
    ['/gateway/_design/x', '/gateway/_design/x'],
    ['/db/a/_design%2Fapp', '/db/a/_design%2Fapp'],
  ];
  for (const [url, want] of cases) t.equal(designDocUrl(url), want, url);
  t.end();
});
