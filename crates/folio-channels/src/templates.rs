//! A channel's templates, compiled once at start: a webhook channel's `message`,
//! `continuation`, `title` and `[deliver]` (and each route's `body_schema` validator); a GitHub
//! channel's `[check]` and `[banner]` (defaults when not written).

use folio_project::{GithubChannel, WebhookChannel, WebhookRoute};
use folio_protocol::Admission;
use minijinja::value::Serde;
use minijinja::{Environment, Value as Context};
use serde_json::Value;

use crate::ChannelError;

/// The default body of a `[deliver]` POST.
pub(crate) const DEFAULT_DELIVER_BODY: &str = r#"{"text": {{ reply | tojson }}}"#;

/// The default check run name: the bot's name, else `folio`.
const CHECK_NAME: &str = "{{ bot_name }}";
/// The default output title: the check run's name.
const CHECK_TITLE: &str = "{{ name }}";
/// The default output summary: a link to the session, then the reply.
const CHECK_SUMMARY: &str = "[View agent]({{ session_url }})\n\n{{ reply }}";
/// The default Details link: the session's playground.
const CHECK_DETAILS_URL: &str = "{{ session_url }}";
/// The default banner comment.
const BANNER_BODY: &str = "**{{ bot_name }}** is working on this: [View agent]({{ session_url }})";

/// One route, compiled.
struct Route {
    path: String,
    admission: Admission,
    has_continuation: bool,
    has_title: bool,
    schema: Option<jsonschema::Validator>,
}

/// What a delivery renders to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    pub(crate) message: String,
    pub(crate) continuation: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) admission: Admission,
}

/// A body that breaks its route's `body_schema`: the first violation, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {violation} (the route's body_schema)")]
pub(crate) struct BodyInvalid {
    /// The field, from `body` (`body.ticketId`).
    pub(crate) field: String,
    /// What the schema says of it.
    pub(crate) violation: String,
}

/// Why a template did not render.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenderError {
    /// The channel has no route of this index.
    #[error("no route {0}")]
    NoRoute(usize),
    /// The template failed over this context (an undefined value, a failing filter).
    #[error("{name}: {source}")]
    Template {
        /// The template (`routes[0].message`, `deliver.url`).
        name: String,
        /// What minijinja reported.
        #[source]
        source: minijinja::Error,
    },
}

/// The compiled templates of one webhook channel (none for other kinds).
#[derive(Default)]
pub(crate) struct Templates {
    env: Environment<'static>,
    routes: Vec<Route>,
}

impl Templates {
    /// Compiles every template and schema of `webhook`; the first that fails is the error.
    pub(crate) fn compile(
        channel: &str,
        webhook: &WebhookChannel,
    ) -> Result<Templates, ChannelError> {
        let mut env = Environment::new();
        let mut add = |name: String, source: &str| add_template(&mut env, channel, name, source);
        let mut routes = Vec::new();
        for (n, route) in webhook.routes.iter().enumerate() {
            let WebhookRoute {
                path,
                message,
                continuation,
                title,
                admission,
                body_schema,
            } = route;
            add(format!("routes[{n}].message"), message)?;
            if let Some(source) = continuation {
                add(format!("routes[{n}].continuation"), source)?;
            }
            if let Some(source) = title {
                add(format!("routes[{n}].title"), source)?;
            }
            let schema = body_schema
                .as_ref()
                .map(|schema| {
                    folio_project::compile_schema(schema).map_err(|err| ChannelError::Schema {
                        channel: channel.to_string(),
                        field: format!("routes[{n}].body_schema"),
                        message: err.to_string(),
                    })
                })
                .transpose()?;
            routes.push(Route {
                path: path.clone(),
                admission: admission.unwrap_or(Admission::Coalesce),
                has_continuation: continuation.is_some(),
                has_title: title.is_some(),
                schema,
            });
        }
        if let Some(deliver) = &webhook.deliver {
            add("deliver.url".into(), &deliver.url)?;
            add(
                "deliver.body".into(),
                deliver.body.as_deref().unwrap_or(DEFAULT_DELIVER_BODY),
            )?;
        }
        Ok(Templates { env, routes })
    }

    /// Compiles a GitHub channel's `[check]` and `[banner]` templates (written or default).
    pub(crate) fn compile_github(
        channel: &str,
        github: &GithubChannel,
    ) -> Result<Templates, ChannelError> {
        let mut env = Environment::new();
        let check = github.check.clone().unwrap_or_default();
        let banner = github.banner.clone().unwrap_or_default();
        for (name, written, default) in [
            ("check.name", check.name, CHECK_NAME),
            ("check.title", check.title, CHECK_TITLE),
            ("check.summary", check.summary, CHECK_SUMMARY),
            ("check.details_url", check.details_url, CHECK_DETAILS_URL),
            ("banner.body", banner.body, BANNER_BODY),
        ] {
            add_template(
                &mut env,
                channel,
                name.to_string(),
                written.as_deref().unwrap_or(default),
            )?;
        }
        Ok(Templates {
            env,
            routes: Vec::new(),
        })
    }

    /// The route paths, in declaration order.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        self.routes.iter().map(|r| r.path.as_str())
    }

    /// The route's path.
    pub(crate) fn path(&self, route: usize) -> &str {
        self.routes.get(route).map_or("", |r| r.path.as_str())
    }

    /// Checks `body` against the route's schema: the first violation, naming the field.
    pub(crate) fn check(&self, route: usize, body: &Value) -> Result<(), BodyInvalid> {
        let Some(schema) = self.routes.get(route).and_then(|r| r.schema.as_ref()) else {
            return Ok(());
        };
        match schema.iter_errors(body).next() {
            None => Ok(()),
            Some(err) => {
                let at = err
                    .instance_path()
                    .as_str()
                    .trim_start_matches('/')
                    .replace('/', ".");
                let field = if at.is_empty() {
                    "body".to_string()
                } else {
                    format!("body.{at}")
                };
                Err(BodyInvalid {
                    field,
                    violation: err.to_string(),
                })
            }
        }
    }

    /// Renders the route's message, continuation and title over `context`.
    pub(crate) fn render_route(
        &self,
        route: usize,
        context: &Value,
    ) -> Result<Rendered, RenderError> {
        let compiled = self.routes.get(route).ok_or(RenderError::NoRoute(route))?;
        let message = self.render(&format!("routes[{route}].message"), context)?;
        let continuation = compiled
            .has_continuation
            .then(|| self.render(&format!("routes[{route}].continuation"), context))
            .transpose()?
            .filter(|key| !key.trim().is_empty());
        let title = compiled
            .has_title
            .then(|| self.render(&format!("routes[{route}].title"), context))
            .transpose()?;
        Ok(Rendered {
            message,
            continuation,
            title,
            admission: compiled.admission,
        })
    }

    /// Renders the template `name` over `context`.
    pub(crate) fn render(&self, name: &str, context: &Value) -> Result<String, RenderError> {
        let failed = |source| RenderError::Template {
            name: name.to_string(),
            source,
        };
        let template = self.env.get_template(name).map_err(failed)?;
        template
            .render(Context::from(Serde(context)))
            .map_err(failed)
    }
}

/// Adds template `name` of `channel`'s manifest to `env`.
fn add_template(
    env: &mut Environment<'static>,
    channel: &str,
    name: String,
    source: &str,
) -> Result<(), ChannelError> {
    env.add_template_owned(name.clone(), source.to_string())
        .map_err(|err| ChannelError::Template {
            channel: channel.to_string(),
            field: name,
            message: err.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn webhook(text: &str) -> WebhookChannel {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn routes_render_and_schemas_name_the_field() {
        let channel = webhook(
            r#"
kind = "webhook"
[[routes]]
path = "/ticket"
message = "{{ body.message }}"
continuation = "{{ body.ticketId }}"
title = "Ticket {{ body.ticketId }}"
body_schema = { type = "object", required = ["ticketId", "message"], properties.ticketId = { type = "integer" } }
[deliver]
url = "https://tickets.example.com/{{ state.ticketId }}"
"#,
        );
        let templates = Templates::compile("tickets", &channel).unwrap();
        let body = serde_json::json!({"ticketId": 42, "message": "It broke"});
        assert_eq!(templates.check(0, &body), Ok(()));
        assert_eq!(
            templates
                .render_route(0, &serde_json::json!({ "body": body }))
                .unwrap(),
            Rendered {
                message: "It broke".into(),
                continuation: Some("42".into()),
                title: Some("Ticket 42".into()),
                admission: Admission::Coalesce,
            }
        );
        assert_eq!(
            templates
                .check(0, &serde_json::json!({"message": "x"}))
                .map_err(|e| e.to_string()),
            Err("body: \"ticketId\" is a required property (the route's body_schema)".into())
        );
        assert_eq!(
            templates
                .check(0, &serde_json::json!({"ticketId": "x", "message": "x"}))
                .map_err(|e| e.to_string()),
            Err("body.ticketId: \"x\" is not of type \"integer\" (the route's body_schema)".into())
        );
        assert_eq!(
            templates
                .render(
                    "deliver.body",
                    &serde_json::json!({"reply": "say \"hi\"", "state": {"ticketId": 42}})
                )
                .unwrap(),
            r#"{"text": "say \"hi\""}"#
        );
    }

    #[test]
    fn a_broken_template_names_its_field() {
        let channel = webhook(
            "kind = \"webhook\"\n[[routes]]\npath = \"/a\"\nmessage = \"{{ body.message \"\n",
        );
        let err = Templates::compile("c", &channel).err().unwrap().to_string();
        assert!(
            err.starts_with("channels/c.toml: routes[0].message: "),
            "{err}"
        );
    }
}
