//! The playground: a local web UI served by the binary at `<prefix>/playground` (README "The
//! playground").
//! Its files (plain ES modules and CSS, no build step) are embedded with `rust-embed`; the page
//! fetches nothing from anywhere else and calls the HTTP API same-origin, so the guard's
//! browser rules (Host, Origin, `Sec-Fetch-Site`) apply to it unchanged. The model's text renders
//! as Markdown through three libraries vendored unchanged from npm under `assets/vendor/`
//! (markdown-it, DOMPurify, highlight.js; pinned in `vendor.txt`, copied by
//! `scripts/vendor-playground`): the page renders as the events stream in, so the server keeps
//! serving the event log as it is, and one sanitizer sees every piece of HTML the page makes.

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use folio_protocol::{ErrorBody, ErrorCode};

/// The page's files, embedded in the binary.
#[derive(rust_embed::Embed)]
#[folder = "src/playground/assets/"]
struct Assets;

/// A Content-Security-Policy that lets the page load only its own files and call only its own
/// server: no CDN, no external fetch, no inline script or style. Trusted Types are required for
/// every HTML sink, and the only policy allowed is DOMPurify's, so no string reaches the DOM as
/// HTML without the sanitizer.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types dompurify";

/// The playground's routes, to nest under an agent's prefix: `/playground` (the page) and
/// `/playground/assets/<file>` (its modules and styles).
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/playground", get(|| async { asset("index.html") }))
        .route(
            "/playground/assets/{*file}",
            get(|Path(file): Path<String>| async move { asset(&file) }),
        )
}

/// One embedded file with its content type, or the API's `404` body.
fn asset(name: &str) -> Response {
    let Some(file) = Assets::get(name) else {
        let body = ErrorBody::new(
            ErrorCode::NotFound,
            format!("the playground has no file {name}"),
        );
        return (StatusCode::NOT_FOUND, axum::Json(body)).into_response();
    };
    (
        [
            (header::CONTENT_TYPE, content_type(name).to_string()),
            (header::CONTENT_SECURITY_POLICY, CSP.to_string()),
            (header::CACHE_CONTROL, "no-cache".to_string()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        file.data.into_owned(),
    )
        .into_response()
}

/// The content type of an embedded file, by its extension.
fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}
