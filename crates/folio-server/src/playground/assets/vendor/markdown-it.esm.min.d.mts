// The part of markdown-it 15 (markdown-it.esm.min.mjs beside this file) that the playground uses,
// for its type check; the package's own declarations import three more packages.

/** One token of the parsed text. */
export interface Token {
  type: string;
  attrs: [string, string][] | null;
  children: Token[] | null;
  attrGet(name: string): string | null;
  attrSet(name: string, value: string): void;
}

/** Parser and renderer options. */
export interface Options {
  html?: boolean;
  linkify?: boolean;
  typographer?: boolean;
  highlight?: ((code: string, lang: string, attrs: string) => string) | null;
}

/** Renders one token to HTML. */
export type RenderRule = (tokens: Token[], idx: number, options: Options, env: unknown, self: Renderer) => string;

/** The HTML renderer and its per-token rules. */
export interface Renderer {
  rules: Record<string, RenderRule | undefined>;
  renderInlineAsText(tokens: Token[], options: Options, env: unknown): string;
}

/** A chain of rules run in order. */
export interface Ruler<State> {
  push(name: string, rule: (state: State) => void): void;
}

/** The state the core rules see: the block-level tokens. */
export interface StateCore {
  tokens: Token[];
}

/** The Markdown parser and renderer. */
export default class MarkdownIt {
  constructor(presetName: "default" | "commonmark" | "zero", options?: Options);
  renderer: Renderer;
  core: { ruler: Ruler<StateCore> };
  utils: { escapeHtml(text: string): string };
  render(src: string, env?: unknown): string;
}
