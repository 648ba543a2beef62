// The part of DOMPurify 3 (purify.es.mjs beside this file) that the playground uses, for its type
// check; the package's own declarations import another package.

/** What `sanitize` keeps, and that it answers a fragment of nodes. */
export interface Config {
  ALLOWED_TAGS: string[];
  ALLOWED_ATTR: string[];
  ALLOWED_URI_REGEXP: RegExp;
  ADD_URI_SAFE_ATTR: string[];
  RETURN_DOM_FRAGMENT: true;
}

/** The sanitizer. */
export interface DOMPurify {
  /** Whether this browser can run the sanitizer at all. */
  isSupported: boolean;
  sanitize(dirty: string, config: Config): DocumentFragment;
  addHook(entryPoint: "afterSanitizeAttributes", hook: (node: Element) => void): void;
}

declare const purify: DOMPurify;
export default purify;
