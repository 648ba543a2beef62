//! The LLM judge: a grader model reads a step (message, tool calls, reply) and a rubric and
//! answers a verdict with its reasoning. It is an ordinary model call, so it records and replays.

use folio_model::{Message, ModelRequest, Provider, ResponseAssembler};
use folio_protocol::{JudgeVerdict, StepObservation};
use futures::StreamExt;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

/// What the grader is told to do.
pub const JUDGE_SYSTEM: &str = "You grade one step of an AI agent against a rubric. Read the user's message, the tool calls the agent made and its reply, then answer with one JSON object and nothing else: {\"pass\": true or false, \"score\": a number from 0 to 1, \"reasoning\": \"one or two sentences\"}.";

/// The grader's answer as asked for.
#[derive(Deserialize)]
struct Answer {
    pass: bool,
    score: f64,
    reasoning: String,
}

/// The grader's prompt for `rubric` about `observed`.
pub fn judge_prompt(rubric: &str, observed: &StepObservation) -> String {
    let calls: Vec<String> = observed
        .tool_calls
        .iter()
        .map(|call| {
            format!(
                "- {} {} → {}{}",
                call.tool,
                call.input,
                call.output,
                if call.is_error { " (error)" } else { "" }
            )
        })
        .collect();
    format!(
        "Rubric: {rubric}\n\nUser message:\n{}\n\nTool calls:\n{}\n\nAgent reply:\n{}\n",
        observed.message,
        if calls.is_empty() {
            "(none)".to_string()
        } else {
            calls.join("\n")
        },
        observed.reply
    )
}

/// Asks `provider` (serving `model`) to grade `observed` against `rubric`. A failed call or an
/// answer that is not the JSON asked for is a failing verdict saying so.
pub async fn judge(
    provider: &dyn Provider,
    model: &str,
    rubric: &str,
    observed: &StepObservation,
) -> JudgeVerdict {
    let request = ModelRequest {
        model: model.to_string(),
        system: JUDGE_SYSTEM.to_string(),
        messages: vec![Message::User {
            text: judge_prompt(rubric, observed),
        }],
        tools: Vec::new(),
        params: Default::default(),
    };
    let failed = |reasoning: String| JudgeVerdict {
        model: model.to_string(),
        pass: false,
        score: 0.0,
        reasoning,
    };
    let mut stream = match provider.stream(&request, CancellationToken::new()).await {
        Ok(stream) => stream,
        Err(err) => return failed(format!("the judge's model call failed: {err}")),
    };
    let mut assembler = ResponseAssembler::new();
    while let Some(delta) = stream.next().await {
        match delta {
            Ok(delta) => assembler.push(&delta),
            Err(err) => return failed(format!("the judge's model call failed: {err}")),
        }
    }
    let text = assembler.text().to_string();
    let json = match (text.find('{'), text.rfind('}')) {
        (Some(start), Some(end)) if start < end => &text[start..=end],
        _ => text.as_str(),
    };
    match serde_json::from_str::<Answer>(json) {
        Ok(answer) => JudgeVerdict {
            model: model.to_string(),
            pass: answer.pass,
            score: answer.score.clamp(0.0, 1.0),
            reasoning: answer.reasoning,
        },
        Err(err) => failed(format!(
            "the judge did not answer the JSON verdict asked for ({err}): {text}"
        )),
    }
}
