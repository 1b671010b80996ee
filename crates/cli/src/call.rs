//! `hands call TOOL [JSON | - | key=value …]`: one call in a one-shot session. Prints the result's
//! text (an image as one line: MIME type, size and the file it was saved to); exits 0 on success,
//! 1 when the result is an error, 2 on a usage error.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use hands_core::middleware::truncate::{OUTPUTS_DIR, outputs_dir, save_new};
use hands_core::{Content, Registry, Session, ToolCall, ToolOutput};
use serde_json::{Map, Value};

use crate::term;

/// Run one call.
pub fn run(
    registry: &Registry,
    root: &Path,
    tool: &str,
    raw: &[String],
    json: bool,
) -> Result<ExitCode> {
    let session = Session::one_shot(root);
    let Some(found) = registry.get(tool) else {
        // Let the registry word the error (it lists close names); it is a usage error.
        let output = block_on(registry.dispatch(&session, ToolCall::new("c", tool, Value::Null)))??;
        term::errln(&format!("hands: {}", output.joined_text()));
        return Ok(ExitCode::from(2));
    };
    let args = parse_args(&found.spec().input_schema, raw)?;
    let id = format!(
        "call-{}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default(),
        std::process::id()
    );
    let call = ToolCall::new(id.clone(), tool, args);
    crate::approve::install(&session);
    let output = match block_on(dispatch_then_close(registry, &session, call))? {
        Ok(output) => output,
        Err(err) => {
            term::errln(&format!("hands: {err}"));
            return Ok(ExitCode::from(1));
        }
    };
    // What a model would read: notices as `[notice] …` text after the result.
    let output = output.notices_as_text();
    print(root, &id, &output, json)?;
    Ok(if output.is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Run the call; on SIGINT or SIGTERM abort it. Either way the session is closed afterwards, so
/// that every process it started is stopped before hands exits.
async fn dispatch_then_close(
    registry: &Registry,
    session: &Session,
    call: ToolCall,
) -> Result<ToolOutput, hands_core::DispatchError> {
    let result = {
        let work = registry.dispatch(session, call);
        tokio::pin!(work);
        tokio::select! {
            result = &mut work => result,
            () = hands_mcp::shutdown_signal() => {
                session.abort();
                work.await
            }
        }
    };
    session.close().await;
    result
}

fn block_on<F: std::future::Future>(future: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let output = runtime.block_on(future);
    // A tool that ignored its cancellation may still run on a blocking thread: do not wait for it.
    runtime.shutdown_background();
    Ok(output)
}

/// Arguments from the command line: `{…}` JSON, `-` (JSON on stdin), or `key=value` pairs, where a
/// value is taken as a string when the schema says the field is a string, and as JSON otherwise.
fn parse_args(schema: &Value, raw: &[String]) -> Result<Value> {
    match raw {
        [] => return Ok(Value::Object(Map::new())),
        [only] if only == "-" => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read arguments from stdin")?;
            return serde_json::from_str(&text)
                .context("the arguments on stdin are not valid JSON");
        }
        [only] if only.trim_start().starts_with('{') => {
            return serde_json::from_str(only).context("the JSON arguments are not valid JSON");
        }
        _ => {}
    }
    let mut map = Map::new();
    for pair in raw {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("argument {pair:?} is not key=value (or give one JSON object, or - for stdin)");
        };
        if map.contains_key(key) {
            bail!("argument `{key}` is given twice");
        }
        let value = if is_string_field(schema, key) {
            Value::String(value.to_owned())
        } else {
            serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()))
        };
        map.insert(key.to_owned(), value);
    }
    Ok(Value::Object(map))
}

fn is_string_field(schema: &Value, key: &str) -> bool {
    let Some(ty) = schema.pointer(&format!("/properties/{key}/type")) else { return false };
    match ty {
        Value::String(t) => t == "string",
        Value::Array(types) => types.iter().any(|t| t == "string"),
        _ => false,
    }
}

fn print(root: &Path, id: &str, output: &ToolOutput, json: bool) -> Result<()> {
    let mut saved = Vec::new();
    for (i, content) in output.content.iter().enumerate() {
        if let Content::Image { data, mime_type } = content {
            saved.push(save_image(root, id, i, data, mime_type)?);
        }
    }
    if json {
        let mut value = serde_json::to_value(output)?;
        if let Some(Value::Array(items)) = value.get_mut("content") {
            let mut saved = saved.iter();
            for item in items.iter_mut().filter(|i| i["type"] == "image") {
                if let (Some(path), Value::Object(map)) = (saved.next(), item) {
                    map.insert("savedTo".into(), Value::String(path.clone()));
                }
            }
        }
        term::data(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
        return Ok(());
    }
    let mut saved = saved.iter();
    for content in &output.content {
        let line = match content {
            Content::Text { text } => text.clone(),
            Content::Image { data, mime_type } => format!(
                "[image {mime_type}, {} bytes, saved to {}]",
                data.len(),
                saved.next().map_or("?", String::as_str)
            ),
        };
        let end = if line.ends_with('\n') { "" } else { "\n" };
        if output.is_error {
            term::err(&format!("{line}{end}"));
        } else {
            term::data(&format!("{line}{end}"))?;
        }
    }
    Ok(())
}

fn save_image(root: &Path, id: &str, index: usize, data: &[u8], mime: &str) -> Result<String> {
    let ext = match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        _ => "bin",
    };
    let dir = outputs_dir(root).with_context(|| format!("cannot create {OUTPUTS_DIR}"))?;
    let name = save_new(&dir, &format!("{id}-{index}"), ext, data)
        .with_context(|| format!("cannot save an image in {OUTPUTS_DIR}"))?;
    Ok(format!("{OUTPUTS_DIR}/{name}"))
}
