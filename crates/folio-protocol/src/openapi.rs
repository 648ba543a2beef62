//! The OpenAPI 3.1 document of the HTTP API, generated from the route table ([`routes`]) with the
//! wire types' JSON Schemas as `components/schemas` (one schemars generator for the whole
//! document, so every type is defined once and referenced by `$ref`). `folio-server` serves it
//! at `GET /v1/openapi.json`; the repository commits it as `docs/openapi.json`.
//!
//! NDJSON answers (`application/x-ndjson`) have no item schema in OpenAPI 3.1: their `schema`
//! is a string (what a client reads) and `x-itemSchema` (the name OpenAPI 3.2 gives the field)
//! is the schema of each line, the event envelope.

use std::collections::BTreeMap;

use schemars::Schema;
use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use serde_json::{Map, Value, json};

use crate::route::{Access, Body, Param, ParamType, Route, Scope, routes};
use crate::{ErrorBody, ErrorCode};

/// The OpenAPI version the document declares.
pub const OPENAPI_VERSION: &str = "3.1.1";

/// Where a document says the agent routes are served (its `servers`).
#[derive(Debug, Clone, Copy)]
pub enum ApiServers<'a> {
    /// Any agent: `/{agent}` on a multi-agent host, or `/` with `--mode single` (the committed
    /// `docs/openapi.json`).
    Any,
    /// These agents' prefixes on this host (`/demo`; the empty prefix is the root).
    Prefixes(&'a [String]),
}

const DESCRIPTION: &str = "The HTTP API of a Folio server (docs/http-api.md), generated from folio-protocol's route table and wire types.

On a multi-agent host every agent route is served under `/<slug>` (the `servers` of the document say where); with `folio serve --mode single` at the root. `GET /v1/agents` lists a host's agents and is always at the host's root.

Every success body carries `\"ok\": true`; every error is an `ErrorBody` (`{\"ok\": false, \"error\": \"<code>\", \"message\": \"…\"}`) whose code fixes the status (see `ErrorCode`). Request bodies are JSON (`Content-Type: application/json`, else `415`) and refuse unknown fields (`400`, the message names the field). Bodies over the limit (1 MiB by default) answer `413`. A method a route does not take answers `405` (`method_not_allowed`), an unknown route `404`.

Streams (`/v1/session/{sessionId}/stream`, `/events`) answer `application/x-ndjson`: one `Event` per line (the event envelope; the media type's `x-itemSchema`), empty lines as keep-alives.

Not described here, as protocols of their own: `POST /v1/mcp` (the agent as an MCP server, streamable HTTP), `/v1/channels/<id>/…` (webhook receivers in their senders' formats, and each channel's delivery list), `/v1/mcp-auth/callback` (the OAuth redirect of MCP authorizations, for a browser), the playground (`/<slug>/playground`) and the host's index page (`GET /`).";

const AUTH_DESCRIPTION: &str = "`Authorization: Bearer <token>` when the server runs with `--bearer-token` or `--tokens-file` (each token authenticates as its principal). Under the default `local-dev-strict` (direct loopback callers only, no proxy-forwarding headers) and with `--allow-anonymous`, no credentials are sent. Whatever the mode, sessions answer only the principal that created them (`403`).";

const HOST_API_SERVER: &str = "The host API: where `FOLIO_HOST_URL` points (`unix:<state-root>/host.sock`, or `http://127.0.0.1:<port>` where a socket cannot be made). Only the processes Folio starts for a session (authored tools, hooks) are given it.";

const HOST_TOKEN_DESCRIPTION: &str = "`Authorization: Bearer $FOLIO_HOST_TOKEN`: the token Folio gives one process of a session (an authored tool's call, a hook's run), valid while that process runs and only for that session's data.";

/// The OpenAPI 3.1 document of every route, with `servers` as given.
pub fn openapi(servers: ApiServers<'_>) -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
        })
        .with_transform(RecursiveTransform(string_enum))
        .into_generator();
    let error_body = generator.subschema_for::<ErrorBody>().to_value();
    let mut paths: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    for route in routes() {
        let item = paths.entry(route.path).or_default();
        match route.scope {
            Scope::Host => {
                item.insert(
                    "servers".into(),
                    json!([{"url": "/", "description": "The host's root."}]),
                );
            }
            Scope::Call => {
                item.insert(
                    "servers".into(),
                    json!([{"url": "/", "description": HOST_API_SERVER}]),
                );
            }
            Scope::Agent => {}
        }
        item.insert(
            route.method.as_str().to_ascii_lowercase(),
            operation(route, &mut generator, &error_body),
        );
    }
    let schemas = generator.take_definitions(true);
    json!({
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Folio HTTP API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": DESCRIPTION,
        },
        "servers": server_list(servers),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": AUTH_DESCRIPTION,
                },
                "hostToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": HOST_TOKEN_DESCRIPTION,
                }
            }
        }
    })
}

/// Writes a `oneOf` whose every branch is one string `const` (how schemars writes a documented
/// unit enum) as `{"type": "string", "enum": [...]}`, the variants' descriptions moved into the
/// schema's own as a list. Both say the same in JSON Schema, but client generators read `enum`
/// as an enumeration and a `oneOf` of constants as a union of single-value types (one of them,
/// `openapi-python-client`, then decodes only the first value).
fn string_enum(schema: &mut Schema) {
    let Some(branches) = schema.get("oneOf").and_then(Value::as_array) else {
        return;
    };
    let constants: Option<Vec<(Value, Option<String>)>> = branches
        .iter()
        .map(|branch| {
            let constant = branch.get("const").filter(|value| value.is_string())?;
            let description = branch
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string);
            Some((constant.clone(), description))
        })
        .collect();
    let Some(constants) = constants.filter(|constants| !constants.is_empty()) else {
        return;
    };
    let listed: Vec<String> = constants
        .iter()
        .filter_map(|(value, description)| {
            let name = value.as_str()?;
            description
                .as_ref()
                .map(|description| format!("- `{name}`: {description}"))
        })
        .collect();
    if let Some(object) = schema.as_object_mut() {
        object.remove("oneOf");
        object.insert("type".into(), json!("string"));
        object.insert(
            "enum".into(),
            Value::Array(constants.into_iter().map(|(value, _)| value).collect()),
        );
        if !listed.is_empty() {
            let description = object
                .get("description")
                .and_then(Value::as_str)
                .map_or_else(String::new, |text| format!("{text}\n\n"));
            object.insert(
                "description".into(),
                json!(format!("{description}{}", listed.join("\n"))),
            );
        }
    }
}

/// [`openapi`] as the bytes served and committed: pretty JSON with a final newline.
pub fn openapi_json(servers: ApiServers<'_>) -> String {
    let mut text = serde_json::to_string_pretty(&openapi(servers)).unwrap_or_default();
    text.push('\n');
    text
}

fn server_list(servers: ApiServers<'_>) -> Value {
    match servers {
        ApiServers::Any => json!([
            {
                "url": "/{agent}",
                "description": "One agent of a multi-agent host (`folio serve`, `folio dev`).",
                "variables": {
                    "agent": {
                        "default": "agent",
                        "description": "The agent's slug (its folder name; `GET /v1/agents` lists them).",
                    }
                }
            },
            {"url": "/", "description": "A single-agent server (`folio serve --mode single`)."}
        ]),
        ApiServers::Prefixes(prefixes) => prefixes
            .iter()
            .map(|prefix| {
                if prefix.is_empty() {
                    json!({"url": "/", "description": "The agent (single-agent layout)."})
                } else {
                    let slug = prefix.trim_start_matches('/');
                    json!({"url": prefix, "description": format!("The agent `{slug}`.")})
                }
            })
            .collect(),
    }
}

/// The `operationId` of a route: its [`crate::Operation`] in camelCase (`createSession`).
pub fn operation_id(route: &Route) -> String {
    let name = format!("{:?}", route.operation);
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => name,
    }
}

fn operation(
    route: &Route,
    generator: &mut schemars::SchemaGenerator,
    error_body: &Value,
) -> Value {
    let mut parameters: Vec<Value> = route
        .path_params()
        .map(|name| {
            json!({
                "name": name,
                "in": "path",
                "required": true,
                "description": path_param_description(name).unwrap_or_default(),
                "schema": {"type": "string"},
            })
        })
        .collect();
    parameters.extend(route.query.iter().map(|param| parameter(param, "query")));
    parameters.extend(route.headers.iter().map(|param| parameter(param, "header")));
    let mut operation = Map::new();
    operation.insert("operationId".into(), operation_id(route).into());
    operation.insert("summary".into(), route.summary.into());
    if !parameters.is_empty() {
        operation.insert("parameters".into(), parameters.into());
    }
    if let Some(request) = route.request {
        operation.insert(
            "requestBody".into(),
            json!({
                "required": !request.optional,
                "content": {"application/json": {"schema": (request.schema)(generator).to_value()}},
            }),
        );
    }
    let mut responses = Map::new();
    for answer in route.answers {
        let content = match answer.body {
            Body::Json(schema) => {
                json!({"application/json": {"schema": schema(generator).to_value()}})
            }
            Body::Ndjson(item) => json!({
                "application/x-ndjson": {
                    "schema": {
                        "type": "string",
                        "description": "Newline-delimited JSON: one value of `x-itemSchema` per line.",
                    },
                    "x-itemSchema": item(generator).to_value(),
                }
            }),
            Body::Bytes => json!({"*/*": {"schema": {}}}),
        };
        responses.insert(
            answer.status.to_string(),
            json!({"description": answer.description, "content": content}),
        );
    }
    for (status, codes) in error_codes(route) {
        let names: Vec<String> = codes.iter().map(|code| format!("`{code}`")).collect();
        responses.insert(
            status.to_string(),
            json!({
                "description": format!("An error: {}.", names.join(", ")),
                "content": {"application/json": {"schema": error_body}},
            }),
        );
    }
    operation.insert("responses".into(), responses.into());
    let security = match route.access {
        Access::Caller => json!([{"bearer": []}]),
        Access::HostToken => json!([{"hostToken": []}]),
        Access::Open => json!([]),
    };
    operation.insert("security".into(), security);
    Value::Object(operation)
}

/// Every error code a route may answer, by status: those of every route, of authenticated
/// routes, of routes with a body, and the route's own.
pub fn error_codes(route: &Route) -> BTreeMap<u16, Vec<ErrorCode>> {
    let mut codes = vec![
        ErrorCode::Forbidden,
        ErrorCode::RequestTimeout,
        ErrorCode::Internal,
    ];
    if matches!(route.access, Access::Caller | Access::HostToken) {
        codes.push(ErrorCode::Unauthorized);
    }
    if route.request.is_some() {
        codes.extend([
            ErrorCode::InvalidRequest,
            ErrorCode::PayloadTooLarge,
            ErrorCode::UnsupportedMediaType,
        ]);
    }
    codes.extend(route.errors.iter().copied());
    let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in codes {
        let list = by_status.entry(code.status()).or_default();
        if !list.contains(&code) {
            list.push(code);
        }
    }
    by_status
}

fn parameter(param: &Param, location: &str) -> Value {
    let schema = match param.kind {
        ParamType::Text => json!({"type": "string"}),
        ParamType::Count => json!({"type": "integer", "minimum": 0}),
        ParamType::Range { min, max } => {
            json!({"type": "integer", "minimum": min, "maximum": max})
        }
        ParamType::OneOf(values) => json!({"type": "string", "enum": values}),
    };
    json!({
        "name": param.name,
        "in": location,
        "required": false,
        "description": param.description,
        "schema": schema,
    })
}

/// What a path parameter names, by its name in the route table.
fn path_param_description(name: &str) -> Option<&'static str> {
    Some(match name {
        "sessionId" => "The session (`ses_…`).",
        "callId" => {
            "The parked call or elicitation (the `callId` of its `action.approval_requested`)."
        }
        "name" => "The tool's name.",
        "reminderId" => "The reminder (`rem_…`).",
        "artifactId" => "The artifact (`art_…`).",
        "runId" => "The eval run.",
        "operation" => {
            "The file tool to run: `read`, `write`, `edit`, `delete`, `list`, `glob` or `grep`."
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_parameter_is_described() {
        for route in routes() {
            for name in route.path_params() {
                assert!(
                    path_param_description(name).is_some(),
                    "{} {}: describe {name}",
                    route.method.as_str(),
                    route.path
                );
            }
        }
    }

    #[test]
    fn unit_enums_are_string_enums_with_their_variants_described() {
        let document = openapi(ApiServers::Any);
        let schemas = document["components"]["schemas"].as_object().unwrap();
        for (name, schema) in schemas {
            let branches = schema["oneOf"].as_array().into_iter().flatten();
            assert!(
                branches.clone().count() == 0 || branches.clone().any(|b| b.get("const").is_none()),
                "{name} is a oneOf of constants: {schema}"
            );
        }
        let status = &schemas["SessionStatus"];
        assert_eq!(
            (&status["type"], &status["enum"]),
            (
                &json!("string"),
                &json!(["running", "waiting", "completed", "failed"])
            )
        );
        assert!(
            status["description"]
                .as_str()
                .is_some_and(|text| text.contains("- `waiting`: ")),
            "{status}"
        );
    }

    #[test]
    fn every_reference_resolves_to_a_component() {
        let document = openapi(ApiServers::Any);
        let schemas = document["components"]["schemas"].as_object().unwrap();
        let mut refs = Vec::new();
        collect_refs(&document, &mut refs);
        assert!(!refs.is_empty());
        for reference in refs {
            let name = reference
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{reference} is not a component"));
            assert!(schemas.contains_key(name), "{reference}");
        }
        assert!(schemas.contains_key("Event"));
        assert!(schemas.contains_key("ErrorCode"));
    }

    fn collect_refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(reference)) = map.get("$ref") {
                    out.push(reference.clone());
                }
                map.values().for_each(|v| collect_refs(v, out));
            }
            Value::Array(values) => values.iter().for_each(|v| collect_refs(v, out)),
            _ => {}
        }
    }
}
