//! JSON Schemas of every wire type, generated from the Rust types.

use schemars::{Schema, schema_for};

use crate::*;

/// The JSON Schema of every wire type, by type name (events, HTTP bodies, MCP results, the
/// `run --json` result), in a stable order.
pub fn schemas() -> Vec<(&'static str, Schema)> {
    vec![
        ("Event", schema_for!(Event)),
        ("RunResult", schema_for!(RunResult)),
        ("CreateSession", schema_for!(CreateSession)),
        ("SessionCreated", schema_for!(SessionCreated)),
        ("FollowUp", schema_for!(FollowUp)),
        ("FollowUpAccepted", schema_for!(FollowUpAccepted)),
        ("Empty", schema_for!(Empty)),
        ("Acknowledged", schema_for!(Acknowledged)),
        ("SessionResponse", schema_for!(SessionResponse)),
        ("SessionPage", schema_for!(Page<SessionSummary>)),
        ("ApprovalRequest", schema_for!(ApprovalRequest)),
        ("ToolCallRequest", schema_for!(ToolCallRequest)),
        ("ForkSession", schema_for!(ForkSession)),
        ("ToolCallResult", schema_for!(ToolCallResult)),
        ("AgentSummaries", schema_for!(Vec<AgentSummary>)),
        ("AgentDescription", schema_for!(AgentDescription)),
        ("AgentInfo", schema_for!(AgentInfo)),
        ("ArtifactPage", schema_for!(Page<ArtifactRecord>)),
        ("ArtifactResponse", schema_for!(ArtifactResponse)),
        ("LogsResponse", schema_for!(LogsResponse)),
        ("EvalRunPage", schema_for!(Page<EvalRunSummary>)),
        ("EvalRunResponse", schema_for!(EvalRunResponse)),
        ("EvalRun", schema_for!(EvalRun)),
        ("SaveEvalCase", schema_for!(SaveEvalCase)),
        ("EvalCaseSaved", schema_for!(EvalCaseSaved)),
        ("EvalCaseList", schema_for!(EvalCaseList)),
        ("SchedulesResponse", schema_for!(SchedulesResponse)),
        ("VariantsResponse", schema_for!(VariantsResponse)),
        ("SetReminder", schema_for!(SetReminder)),
        ("ReminderResponse", schema_for!(ReminderResponse)),
        ("ReminderPage", schema_for!(Page<Reminder>)),
        ("ErrorBody", schema_for!(ErrorBody)),
        ("AskArguments", schema_for!(AskArguments)),
        ("AskResult", schema_for!(AskResult)),
        ("CheckArguments", schema_for!(CheckArguments)),
        ("CheckResult", schema_for!(CheckResult)),
        ("DeliveryAccepted", schema_for!(DeliveryAccepted)),
        ("DeliveriesResponse", schema_for!(DeliveriesResponse)),
        ("UrlVerification", schema_for!(UrlVerification)),
        ("CommandHelp", schema_for!(CommandHelp)),
        ("CallOutput", schema_for!(CallOutput)),
        ("HookPayload", schema_for!(HookPayload)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_has_a_unique_name_and_describes_an_object_or_array() {
        let schemas = schemas();
        let mut names: Vec<&str> = schemas.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), schemas.len());
        for (name, schema) in &schemas {
            let value = schema.as_value();
            let kind = value.get("type").and_then(|t| t.as_str());
            let composite = value.get("oneOf").is_some() || value.get("allOf").is_some();
            assert!(
                matches!(kind, Some("object" | "array")) || composite,
                "{name}: {value}"
            );
        }
        let event = schemas
            .iter()
            .find(|(name, _)| *name == "Event")
            .map(|(_, schema)| schema.as_value().to_string())
            .unwrap();
        assert!(event.contains("turn.completed"), "{event}");
        assert!(event.contains("sessionId"), "{event}");
    }
}
