//! `set_reminder`: the agent asks for a one-off wake of its chat session. The tool only checks
//! the request and answers; the call recorded in the session log is the request, and the
//! server turns it into a reminder when the turn ends (the agent never reaches the server).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input;
use super::{Tool, ToolContext, ToolError, ToolOutput};

/// The model-facing name of the tool (the server looks for its calls in the log).
pub const SET_REMINDER: &str = "set_reminder";

/// `set_reminder`'s arguments.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReminderInput {
    /// When to be reminded: an RFC 3339 instant such as 2027-01-04T09:00:00Z. Give at or in.
    at: Option<String>,
    /// How long from now: a number with a unit (s, m, h, d), e.g. 90s, 15m, 1h30m. Give at or in.
    #[serde(rename = "in")]
    after: Option<String>,
    /// What the reminder says when it wakes this conversation.
    message: String,
}

/// The `set_reminder` tool (granted by `setReminder` in the allowlist).
#[derive(Debug, Clone, Copy, Default)]
pub struct SetReminderTool;

#[async_trait::async_trait]
impl Tool for SetReminderTool {
    fn name(&self) -> &str {
        SET_REMINDER
    }

    fn description(&self) -> &str {
        "Set a one-off reminder: at that time this conversation wakes with the message as a new user message."
    }

    fn input_schema(&self) -> Value {
        input::schema::<ReminderInput>()
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        let typed: ReminderInput = input::parse(input)?;
        match (typed.at.as_deref(), typed.after.as_deref()) {
            (Some(at), None) => {
                at.parse::<chrono::DateTime<chrono::Utc>>().map_err(|err| {
                    ToolError(format!(
                        "argument \"at\": \"{at}\" is not an RFC 3339 instant ({err}); e.g. 2027-01-04T09:00:00Z"
                    ))
                })?;
            }
            (None, Some(after)) => {
                folio_project::parse_delay(after)
                    .map_err(|err| ToolError(format!("argument \"in\": {err}")))?;
            }
            _ => {
                return Err(ToolError(
                    "give exactly one of \"at\" (an RFC 3339 instant) or \"in\" (a delay like \"2h\")"
                        .into(),
                ));
            }
        }
        if typed.message.trim().is_empty() {
            return Err(ToolError(
                "argument \"message\": empty; say what the reminder delivers".into(),
            ));
        }
        input::canonical(&typed)
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let typed: ReminderInput = input::parse(input)?;
        let when = match (typed.at, typed.after) {
            (Some(at), _) => format!("at {at}"),
            (_, Some(after)) => format!("in {after}"),
            _ => String::new(),
        };
        Ok(ToolOutput::Text(format!(
            "Reminder requested {when}; it is set when this turn ends and wakes this conversation then."
        )))
    }
}
