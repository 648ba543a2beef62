//! The `storage_*` tools (granted by `storage` in the allowlist): the model keeps small JSON
//! values by key — its own notes per session, per principal or for the whole agent — in the
//! same storage the host API serves, without the files of `memory/`. The session engine
//! answers them through the turn's [`HostBroker`](crate::tools::host::HostBroker).

use folio_project::{NativeTool, StorageOp};
use folio_protocol::{KvDelete, KvGet, KvList, KvPut};
use serde_json::Value;

use super::input;
use super::{Tool, ToolContext, ToolError, ToolOutput};
use crate::tools::host::StorageRequest;

/// One of the four storage tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageTool(pub StorageOp);

impl StorageTool {
    fn request(self, input: Value) -> Result<StorageRequest, ToolError> {
        Ok(match self.0 {
            StorageOp::Get => StorageRequest::Get(input::parse::<KvGet>(input)?),
            StorageOp::Put => StorageRequest::Put(input::parse::<KvPut>(input)?),
            StorageOp::Delete => StorageRequest::Delete(input::parse::<KvDelete>(input)?),
            StorageOp::List => StorageRequest::List(input::parse::<KvList>(input)?),
        })
    }
}

#[async_trait::async_trait]
impl Tool for StorageTool {
    fn name(&self) -> &str {
        NativeTool::Storage(self.0).tool_name()
    }

    fn description(&self) -> &str {
        match self.0 {
            StorageOp::Get => {
                "Read a stored value by key. scope: session (default, this conversation), principal (every conversation with this user) or agent (shared by all). Answers the entry with its version, or null."
            }
            StorageOp::Put => {
                "Store a JSON value under a key (scope: session, principal or agent). Give ifVersion to write only over that version (0: only when the key is new); ttlSeconds to let it expire."
            }
            StorageOp::Delete => {
                "Delete a stored value by key (scope: session, principal or agent)."
            }
            StorageOp::List => {
                "List stored values in key order (scope: session, principal or agent), optionally by key prefix; pass next as after for the following page."
            }
        }
    }

    fn input_schema(&self) -> Value {
        match self.0 {
            StorageOp::Get => input::schema::<KvGet>(),
            StorageOp::Put => input::schema::<KvPut>(),
            StorageOp::Delete => input::schema::<KvDelete>(),
            StorageOp::List => input::schema::<KvList>(),
        }
    }

    fn prepare(&self, input: Value) -> Result<Value, ToolError> {
        self.request(input.clone())?;
        Ok(input)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let request = self.request(input)?;
        let Some(host) = &ctx.host else {
            return Err(ToolError(format!(
                "{}: storage is kept by the session engine, which this call runs without",
                self.name()
            )));
        };
        host.storage(ctx, request)
            .await
            .map(ToolOutput::Json)
            .map_err(|err| ToolError(err.to_string()))
    }
}
