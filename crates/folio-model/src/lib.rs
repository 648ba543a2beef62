//! Model providers behind one `Provider` trait: OpenAI Chat Completions, Anthropic Messages,
//! OpenAI-compatible endpoints, and the `replay:` provider for recorded fixtures.
