//! `cargo run -p folio-example-tenant-root -- <tenants-dir> <tenant:thread> <message>`: one turn
//! of the tenant-support agent on the tenant's own folder; prints the reply. The model is
//! `FOLIO_MODEL` (default: the agent's), its key the provider's usual variable.

use folio_example_tenant_root::{LOCAL, ModelSpec, Tenants, open, reply};
use folio_protocol::CreateSession;
use folio_session::SessionOptions;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tenants, key, message] = args.as_slice() else {
        anyhow::bail!("usage: folio-example-tenant-root <tenants-dir> <tenant:thread> <message>");
    };
    let project = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let state = std::env::temp_dir().join(format!("folio-tenant-root-{}", std::process::id()));
    let spec = std::env::var("FOLIO_MODEL").unwrap_or_else(|_| "openai:gpt-4.1-mini".into());
    let model = ModelSpec {
        spec: &spec,
        base_url: None,
        env: &|name: &str| std::env::var(name).ok(),
    };
    let (manager, _agent) = open(project, Tenants::new(tenants), &state, model).await?;
    let options = SessionOptions {
        continuation_key: Some(key.clone()),
        ..SessionOptions::default()
    };
    let accepted = manager
        .sessions()
        .create_with(
            LOCAL,
            "example",
            CreateSession::message(message.clone()),
            options,
        )
        .await?;
    let reply = reply(&manager, LOCAL, &accepted.session_id).await;
    manager.shutdown().await;
    println!("{}", reply?);
    Ok(())
}
