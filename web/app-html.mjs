// Writes the MCP App (ui://rat-py/app.html) as one self-contained document:
//   node app-html.mjs TEMPLATE.html APP.js APP.css OUT.html
// The script and style go inline (a host's sandbox serves the document
// alone: the spec's default CSP allows inline script and style, and no
// origin to load from). Run by the build (bridge/CMakeLists.txt).
import { readFileSync, writeFileSync, existsSync } from 'node:fs';

const [tmpl, js, css, out] = process.argv.slice(2);
// "</" would end the <script> or <style> element early: write it so the
// HTML parser does not see it (the same text to JS and CSS).
const script = readFileSync(js, 'utf8').replace(/<\/(script)/gi, '<\\/$1');
const style = existsSync(css) ? readFileSync(css, 'utf8').replace(/<\/(style)/gi, '<\\/$1') : '';
let html = readFileSync(tmpl, 'utf8');
if (!html.includes('/*RAT-APP-JS*/') || !html.includes('/*RAT-APP-CSS*/')) throw new Error('app-html.mjs: template markers missing');
// Functions as replacements: '$' in the bundle stays as it is.
html = html.replace('/*RAT-APP-CSS*/', () => style).replace('/*RAT-APP-JS*/', () => script);
writeFileSync(out, html);
