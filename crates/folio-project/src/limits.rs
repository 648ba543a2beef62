//! `[limits]` in `folio.toml`: how much one send, one session workspace and one principal may
//! use. The input limits (sizes, files, tool calls per turn) have defaults, so an absent section
//! still bounds a server; the per-principal quotas (sessions, running turns, messages per minute,
//! storage) hold only where `[limits]` or a principal's entry in the tokens file
//! ([`PrincipalLimits`]) sets them: a one-user server is not rate limited, and a shared one
//! chooses its own numbers.

use schemars::JsonSchema;
use serde::Deserialize;

/// `[limits]` of `folio.toml`; each key left out takes its default.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Most files a session workspace may hold (default 10,000).
    pub workspace_files: u64,
    /// Most bytes the files of a session workspace may hold (default 1 GiB).
    pub workspace_bytes: u64,
    /// Most bytes of one message's text (default 256 KiB).
    pub message_bytes: u64,
    /// Most `workspaceFiles` one send may carry (default 1,000).
    pub send_files: u64,
    /// Most bytes of `workspaceFiles` contents one send may carry (default 1 MiB).
    pub send_bytes: u64,
    /// Most sessions one principal may hold (default: no limit).
    pub sessions: Option<u64>,
    /// Most turns of one principal's sessions running at once (default: no limit).
    pub running_turns: Option<u64>,
    /// Messages (creates and follow-ups) one principal may send per minute, in bursts of as
    /// many (default: no limit).
    pub messages_per_minute: Option<u64>,
    /// Most tool calls one turn may make (default 200).
    pub tool_calls_per_turn: u64,
    /// Most bytes one principal's session workspaces on this server may hold together
    /// (default: no limit).
    pub storage_bytes: Option<u64>,
}

impl Limits {
    /// The default of every key.
    pub const DEFAULT: Limits = Limits {
        workspace_files: 10_000,
        workspace_bytes: 1 << 30,
        message_bytes: 256 * 1024,
        send_files: 1_000,
        send_bytes: 1 << 20,
        sessions: None,
        running_turns: None,
        messages_per_minute: None,
        tool_calls_per_turn: 200,
        storage_bytes: None,
    };

    /// Every key with its value (`None`: no limit), in declaration order.
    pub fn entries(&self) -> [(&'static str, Option<u64>); 10] {
        let Limits {
            workspace_files,
            workspace_bytes,
            message_bytes,
            send_files,
            send_bytes,
            sessions,
            running_turns,
            messages_per_minute,
            tool_calls_per_turn,
            storage_bytes,
        } = *self;
        [
            ("workspace_files", Some(workspace_files)),
            ("workspace_bytes", Some(workspace_bytes)),
            ("message_bytes", Some(message_bytes)),
            ("send_files", Some(send_files)),
            ("send_bytes", Some(send_bytes)),
            ("sessions", sessions),
            ("running_turns", running_turns),
            ("messages_per_minute", messages_per_minute),
            ("tool_calls_per_turn", Some(tool_calls_per_turn)),
            ("storage_bytes", storage_bytes),
        ]
    }

    /// The keys set to zero (a limit of zero would refuse everything), for `folio validate`.
    pub fn zero_keys(&self) -> Vec<&'static str> {
        self.entries()
            .into_iter()
            .filter(|(_, value)| *value == Some(0))
            .map(|(key, _)| key)
            .collect()
    }

    /// These limits with a principal's own quotas over them.
    pub fn with(mut self, own: &PrincipalLimits) -> Limits {
        let PrincipalLimits {
            sessions,
            running_turns,
            messages_per_minute,
            tool_calls_per_turn,
            storage_bytes,
        } = *own;
        self.sessions = sessions.or(self.sessions);
        self.running_turns = running_turns.or(self.running_turns);
        self.messages_per_minute = messages_per_minute.or(self.messages_per_minute);
        self.tool_calls_per_turn = tool_calls_per_turn.unwrap_or(self.tool_calls_per_turn);
        self.storage_bytes = storage_bytes.or(self.storage_bytes);
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// A principal's own quotas (`limits = { … }` of its entry in the tokens file), each over the
/// `[limits]` key of the same name.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrincipalLimits {
    /// Most sessions the principal may hold.
    pub sessions: Option<u64>,
    /// Most of its turns running at once.
    pub running_turns: Option<u64>,
    /// Messages it may send per minute.
    pub messages_per_minute: Option<u64>,
    /// Most tool calls one of its turns may make.
    pub tool_calls_per_turn: Option<u64>,
    /// Most bytes its session workspaces may hold together.
    pub storage_bytes: Option<u64>,
}
