// KaTeX as @vscode/markdown-it-katex requires it (CommonJS), so that the
// bundle holds one copy of it, not its ESM build beside.
module.exports = require('katex');
