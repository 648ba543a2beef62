// The part of highlight.js 11 (highlight.min.js beside this file: the core with its common
// languages) that the playground uses, for its type check.

/** A highlighted piece of code: `value` is its HTML (the code escaped, in `hljs-*` spans). */
export interface HighlightResult {
  value: string;
}

/** The highlighter. */
export interface HLJSApi {
  getLanguage(name: string): object | undefined;
  highlight(code: string, options: { language: string; ignoreIllegals?: boolean }): HighlightResult;
}

declare const hljs: HLJSApi;
export default hljs;
